#version 450
// A deliberate cross-workgroup data race (tests/vk/racy.c): every invocation runs a loop of
// non-atomic read-modify-writes on one of four shared words, acc[i] = acc[i] * M + x, a chain
// whose value depends on the order of the updates and loses those that overlap. lavapipe runs
// workgroups on several threads, so the four words differ from run to run. volatile keeps each
// load and store in the loop (no promotion to a register).
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer In { uint v[]; } src;
layout(set = 0, binding = 1) coherent volatile buffer Acc { uint v[]; } acc;
layout(push_constant) uniform PC { uint iters; uint n; } pc;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    uint w = gl_LocalInvocationID.x & 3u;
    uint x = i < pc.n ? src.v[i] : 0u;
    for (uint k = 0u; k < pc.iters; k++)
        acc.v[w] = acc.v[w] * 2654435761u + (x ^ k);
}
