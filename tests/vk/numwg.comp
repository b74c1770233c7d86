#version 450
// tests/vk/vk_orderdep.c numwg: reads gl_NumWorkGroups, which a dispatch cut into pieces
// (vkCmdDispatchBase) would see as the piece's count: the split perturbation leaves it whole.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) writeonly buffer Out { float y[]; };
void main()
{
    uint i = gl_GlobalInvocationID.x;
    y[i] = x[i] + float(gl_NumWorkGroups.x) * 1000.0 + float(gl_WorkGroupID.x);
}
