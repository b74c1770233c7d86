#version 450
// tests/vk/img_mix.comp — vk_images: a combined image sampler (2D array, mip levels, linear
// filter), a 3D storage image read, a 1D array sampled image with an immutable sampler, a 2D
// storage image written, and a storage buffer of per-texel sums.
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0) uniform sampler2DArray tex;
layout(set = 0, binding = 1, r32f) uniform readonly image3D vol;
layout(set = 0, binding = 2) uniform texture1DArray line;
layout(set = 0, binding = 3) uniform sampler smp;
layout(set = 0, binding = 4, rgba32f) uniform writeonly image2D outi;
layout(set = 0, binding = 5) buffer Res { float v[]; } res;
layout(push_constant) uniform P { float lod; float scale; } pc;
void main()
{
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (p.x >= 32 || p.y >= 24)
        return;
    vec2 uv = (vec2(p) + vec2(0.3, 0.6)) / vec2(32.0, 24.0);
    vec4 a = textureLod(tex, vec3(uv, float(p.x & 1)), pc.lod);
    float b = imageLoad(vol, ivec3(p.x % 16, p.y % 8, (p.x + p.y) % 4)).r;
    vec4 c = textureLod(sampler1DArray(line, smp), vec2(uv.x, float(p.y % 3)), 1.0);
    imageStore(outi, p, a * pc.scale + c - vec4(b));
    res.v[p.y * 32 + p.x] = a.x + a.y + c.z + b; /* sums: no contraction to fma */
}
