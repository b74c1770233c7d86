// tests/webgpu/buffers.mjs — WebGPU compute on storage buffers with a uniform block, several
// submissions (each reading what the previous wrote), writeBuffer uploads between them, and
// read-back through mapped buffers. Prints one checksum line.
import { device, readBuffer, checksum } from './common.mjs';

const dev = await device();
const n = 4096;
const code = `
struct Params { scale: f32, bias: f32, n: u32, round: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) {
    let i = id.x;
    if (i >= p.n) { return; }
    y[i] = p.scale * x[i] + y[i] * 0.5 + p.bias + f32(p.round);
}`;
const pipe = dev.createComputePipeline({
    layout: 'auto',
    compute: { module: dev.createShaderModule({ code }), entryPoint: 'main' },
});
const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
const x = dev.createBuffer({ size: n * 4, usage });
const y = dev.createBuffer({ size: n * 4, usage });
const u = dev.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
const bg = dev.createBindGroup({
    layout: pipe.getBindGroupLayout(0),
    entries: [
        { binding: 0, resource: { buffer: u } },
        { binding: 1, resource: { buffer: x } },
        { binding: 2, resource: { buffer: y } },
    ],
});
const xs = new Float32Array(n);
for (let i = 0; i < n; i++) xs[i] = Math.sin(i) * 100;
dev.queue.writeBuffer(x, 0, xs);
const sums = [];
for (let round = 0; round < 4; round++) {
    const params = new ArrayBuffer(16);
    new Float32Array(params, 0, 2).set([1.5 + round, -0.25 * round]);
    new Uint32Array(params, 8, 2).set([n - round * 100, round]);
    dev.queue.writeBuffer(u, 0, params);
    const enc = dev.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipe);
    pass.setBindGroup(0, bg);
    pass.dispatchWorkgroups(Math.ceil(n / 64));
    pass.end();
    dev.queue.submit([enc.finish()]);
    if (round % 2 === 1)
        sums.push(checksum(await readBuffer(dev, y, n * 4)));
}
console.log('buffers', checksum(await readBuffer(dev, y, n * 4)), sums.join(' '));
dev.destroy();
