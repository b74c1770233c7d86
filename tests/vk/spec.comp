#version 450
// specialization constants of each scalar kind, and the local size from one
// (tests/vk/vk_pipelines spec)
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int I = -3;
layout(constant_id = 2) const float F = 1.5;
layout(constant_id = 3) const bool B = false;
layout(constant_id = 4) const uint U = 7u;
layout(set = 0, binding = 1) writeonly buffer Out { uint v[]; } dst;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    float x = float(i) * F + float(I);
    dst.v[i] = (B ? uint(abs(x)) : U * i) + gl_WorkGroupSize.x * 100000u;
}
