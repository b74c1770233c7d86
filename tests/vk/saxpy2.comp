#version 450
// y[i] = a * x[i] + y[i] + pc.b with a from a uniform buffer bound with a dynamic offset in set
// 1 while x and y are pushed in set 0 (tests/vk/vk_descriptors push2)
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float v[]; } x;
layout(set = 0, binding = 1) buffer Y { float v[]; } y;
layout(set = 1, binding = 0) uniform A { float a; } ua;
layout(push_constant) uniform PC { float b; uint n; } pc;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n)
        y.v[i] = ua.a * x.v[i] + y.v[i] + pc.b;
}
