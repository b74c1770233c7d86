#version 450
// out[i] = src[i] * p.mul (src a uniform texel buffer), acc[i] += i (a storage texel buffer)
// (tests/vk/vk_descriptors template)
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) uniform utextureBuffer src;
layout(set = 0, binding = 1) uniform P { uint mul; uint n; } p;
layout(set = 0, binding = 2) writeonly buffer O { uint v[]; } o;
layout(set = 0, binding = 3, r32ui) uniform uimageBuffer acc;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) {
        o.v[i] = texelFetch(src, int(i)).x * p.mul;
        imageStore(acc, int(i), imageLoad(acc, int(i)) + uvec4(i));
    }
}
