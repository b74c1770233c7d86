#version 450
// y[i] = a * x[i] + y[i], mixed pc.iters times per element (vk_bench gate): integer arithmetic,
// so bit-exact on any device, and a loop the compiler cannot fold, so that the iteration count
// sets the kernel's device time (the timing gate's slowdown is injected through it).
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { uint v[]; } x;
layout(set = 0, binding = 1) buffer Y { uint v[]; } y;
layout(push_constant) uniform PC { uint a; uint n; uint iters; } pc;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.n)
        return;
    uint xi = x.v[i], yi = y.v[i];
    for (uint k = 0; k < pc.iters; k++)
        yi = (yi ^ k) * 1664525u + pc.a * xi;
    y.v[i] = yi;
}
