#version 450
// tests/vk/vk_orderdep.c: every invocation adds its input to one float with atomicAdd (the
// sum's rounding follows the order the workgroups run in unless every partial sum is exact)
// and writes y = 2 x + t, t read from a buffer the program may or may not have written.
#extension GL_EXT_shader_atomic_float : require
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) buffer Sum { float s[]; };
layout(std430, binding = 2) readonly buffer Scratch { float t[]; };
layout(std430, binding = 3) writeonly buffer Out { float y[]; };
layout(push_constant) uniform P { uint n; };
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i >= n)
        return;
    atomicAdd(s[0], x[i]);
    y[i] = 2.0 * x[i] + t[i];
}
