#version 450
// tests/vk/img_linear.comp — vk_images: a linear image the host wrote, fetched texel by texel,
// into a linear storage image the host reads.
layout(local_size_x = 4, local_size_y = 4) in;
layout(set = 0, binding = 0) uniform sampler2D lin;
layout(set = 0, binding = 1, rgba8) uniform writeonly image2D lout;
void main()
{
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (p.x >= 20 || p.y >= 10)
        return;
    vec4 t = texelFetch(lin, p, 0);
    imageStore(lout, p, t.bgra * 0.5 + vec4(0.25));
}
