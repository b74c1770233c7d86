#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
// dst[i] = the sum of src over i's subgroup * 1000 + the subgroup size: an output that depends
// on the subgroup size the pipeline runs with (tests/vk/vk_pipelines subgroup)
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer In { uint v[]; } src;
layout(set = 0, binding = 1) writeonly buffer Out { uint v[]; } dst;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    dst.v[i] = subgroupAdd(src.v[i]) * 1000u + gl_SubgroupSize;
}
