#version 450
// out[i] = in[i] * k + pc.add, over n elements (tests/vk programs)
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint K = 3;
layout(set = 0, binding = 0) readonly buffer In { uint v[]; } src;
layout(set = 0, binding = 1) writeonly buffer Out { uint v[]; } dst;
layout(push_constant) uniform PC { uint add; uint n; } pc;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n)
        dst.v[i] = src.v[i] * K + pc.add;
}
