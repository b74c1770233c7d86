#version 450
// acc[i] = acc[i] * 31 + x[i] + c.salt: a read-modify-write chain (tests/vk programs)
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Acc { uint v[]; } acc;
layout(set = 0, binding = 1) readonly buffer X { uint v[]; } x;
layout(set = 0, binding = 2) uniform C { uint salt; uint n; } c;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < c.n)
        acc.v[i] = acc.v[i] * 31u + x.v[i] + c.salt;
}
