// tests/webgpu/textures.mjs — images in WebGPU compute: a storage texture written with
// textureStore, a texture uploaded with writeTexture and sampled (linear filtering, clamp) with
// textureSampleLevel, copies between textures and buffers, and read-back of both a buffer and
// a texture through copyTextureToBuffer. Prints one checksum line.
import { device, readBuffer, checksum } from './common.mjs';

const dev = await device();
const W = 64, H = 48;
const src = dev.createTexture({
    size: [W, H], format: 'rgba8unorm',
    usage: GPUTextureUsage.TEXTURE_BINDING | GPUTextureUsage.COPY_DST,
});
const img = new Uint8Array(W * H * 4);
for (let i = 0; i < img.length; i++) img[i] = (i * 37 + (i >> 8)) & 255;
dev.queue.writeTexture({ texture: src }, img, { bytesPerRow: W * 4 }, [W, H]);
const dst = dev.createTexture({
    size: [W, H], format: 'rgba32float',
    usage: GPUTextureUsage.STORAGE_BINDING | GPUTextureUsage.COPY_SRC,
});
const out = dev.createBuffer({
    size: W * H * 4,
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC,
});
const sampler = dev.createSampler({ magFilter: 'linear', minFilter: 'linear',
                                    addressModeU: 'clamp-to-edge', addressModeV: 'clamp-to-edge' });
const code = `
@group(0) @binding(0) var t: texture_2d<f32>;
@group(0) @binding(1) var s: sampler;
@group(0) @binding(2) var o: texture_storage_2d<rgba32float, write>;
@group(0) @binding(3) var<storage, read_write> lum: array<f32>;
@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) id: vec3u) {
    if (id.x >= ${W}u || id.y >= ${H}u) { return; }
    let uv = (vec2f(id.xy) + vec2f(0.25, 0.75)) / vec2f(${W}.0, ${H}.0);
    let c = textureSampleLevel(t, s, uv, 0.0);
    let d = textureLoad(t, vec2i(id.xy), 0);
    textureStore(o, vec2i(id.xy), vec4f(c.rgb * 2.0 - d.gbr, 1.0));
    lum[id.y * ${W}u + id.x] = dot(c.rgb, vec3f(0.299, 0.587, 0.114));
}`;
const pipe = dev.createComputePipeline({
    layout: 'auto',
    compute: { module: dev.createShaderModule({ code }), entryPoint: 'main' },
});
const bg = dev.createBindGroup({
    layout: pipe.getBindGroupLayout(0),
    entries: [
        { binding: 0, resource: src.createView() },
        { binding: 1, resource: sampler },
        { binding: 2, resource: dst.createView() },
        { binding: 3, resource: { buffer: out } },
    ],
});
const enc = dev.createCommandEncoder();
const pass = enc.beginComputePass();
pass.setPipeline(pipe);
pass.setBindGroup(0, bg);
pass.dispatchWorkgroups(W / 8, H / 8);
pass.end();
const tb = dev.createBuffer({ size: W * H * 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
enc.copyTextureToBuffer({ texture: dst }, { buffer: tb, bytesPerRow: W * 16 }, [W, H]);
dev.queue.submit([enc.finish()]);
await tb.mapAsync(GPUMapMode.READ);
const texSum = checksum(new Uint8Array(tb.getMappedRange().slice(0)));
tb.unmap();
console.log('textures', texSum, checksum(await readBuffer(dev, out, W * H * 4)));
dev.destroy();
