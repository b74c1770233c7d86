#version 450
#extension GL_EXT_nonuniform_qualifier : require
// every buffer k < pc.count of a runtime array of storage buffers (descriptor indexing:
// partially bound, variable count, update after bind): bufs[k][i] = bufs[k][i] * 5 + k + i
// (tests/vk/vk_descriptors indexing)
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer B { uint v[]; } bufs[];
layout(push_constant) uniform PC { uint count; uint n; } pc;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    for (uint k = 0; k < pc.count; k++)
        if (i < pc.n)
            bufs[nonuniformEXT(k)].v[i] = bufs[nonuniformEXT(k)].v[i] * 5u + k + i;
}
