#version 450
#extension GL_EXT_buffer_reference : require
// buffer device addresses: two input pointers in a buffer (table), the output pointer in push
// constants: out[i] = a[i] * 3 + b[i] + round (tests/vk/vk_address)
layout(local_size_x = 64) in;
layout(buffer_reference, std430) readonly buffer Data { uint v[]; };
layout(buffer_reference, std430) writeonly buffer Out { uint v[]; };
layout(set = 0, binding = 0) readonly buffer Table { Data src[2]; } table;
layout(push_constant) uniform PC { Out dst; uint n; uint round; } pc;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n)
        pc.dst.v[i] = table.src[0].v[i] * 3u + table.src[1].v[i] + pc.round;
}
