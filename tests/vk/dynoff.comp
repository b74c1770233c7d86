#version 450
// a 64-word window of s (a storage buffer bound with a dynamic offset): s[i] = s[i] * 3 + u.add
// + i, with u.add from a uniform buffer bound with a dynamic offset (tests/vk/vk_descriptors)
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) uniform U { uint add; } u;
layout(set = 0, binding = 1) buffer S { uint v[64]; } s;
void main()
{
    uint i = gl_LocalInvocationID.x;
    s.v[i] = s.v[i] * 3u + u.add + i;
}
