#version 450
#extension GL_EXT_buffer_reference : require
// buffer device addresses, read only: sum[i] = a[i] + b[i] through the table's pointers into a
// bound storage buffer (tests/vk/vk_address)
layout(local_size_x = 64) in;
layout(buffer_reference, std430) readonly buffer Data { uint v[]; };
layout(set = 0, binding = 0) readonly buffer Table { Data src[2]; } table;
layout(set = 0, binding = 1) writeonly buffer Sum { uint v[]; } sum;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    sum.v[i] = table.src[0].v[i] + table.src[1].v[i];
}
