#version 450
// out[i] = in[i] * 3 + pc.add through a descriptor array indexed non-uniformly: the module
// declares StorageBufferArrayNonUniformIndexing, which needs that feature (vk_pipelines)
#extension GL_EXT_nonuniform_qualifier : require
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer In { uint v[]; } src[1];
layout(set = 0, binding = 1) writeonly buffer Out { uint v[]; } dst;
layout(push_constant) uniform PC { uint add; uint n; } pc;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n)
        dst.v[i] = src[nonuniformEXT(i / 65536u)].v[i] * 3u + pc.add;
}
