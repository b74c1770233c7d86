#version 450
// dst[i] = src[i] * 2654435761 + pc.add over n elements, 2D grid (rows of gl_NumWorkGroups.x
// groups) so that 16M elements fit the 65535-group limit (bench/vk_capture_overhead.sh)
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer In { uint v[]; } src;
layout(set = 0, binding = 1) writeonly buffer Out { uint v[]; } dst;
layout(push_constant) uniform PC { uint add; uint n; } pc;
void main()
{
    uint i = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u + gl_GlobalInvocationID.x;
    if (i < pc.n)
        dst.v[i] = src.v[i] * 2654435761u + pc.add;
}
