// tests/webgpu/mlp.mjs — inference the way small ML runtimes on WebGPU run it: weights
// uploaded once, a batch through two dense layers (tiled matrix multiply with workgroup shared
// memory, bias and ReLU), a row-wise softmax, each layer a dispatch with its own uniform block
// of shapes, several batches in several submissions, results mapped back. Prints one checksum
// line of every batch's output.
import { device, readBuffer, checksum } from './common.mjs';

const dev = await device();
const B = 32, IN = 96, HID = 128, OUT = 10;
const matmul = `
struct Shape { m: u32, k: u32, n: u32, relu: u32 }
@group(0) @binding(0) var<uniform> sh: Shape;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> c: array<f32>;
var<workgroup> ta: array<array<f32, 16>, 16>;
var<workgroup> tw: array<array<f32, 16>, 16>;
@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) g: vec3u, @builtin(local_invocation_id) l: vec3u) {
    let row = g.y; let col = g.x;
    var acc = 0.0;
    for (var t = 0u; t < (sh.k + 15u) / 16u; t++) {
        let ka = t * 16u + l.x; let kw = t * 16u + l.y;
        ta[l.y][l.x] = select(0.0, a[row * sh.k + ka], row < sh.m && ka < sh.k);
        tw[l.y][l.x] = select(0.0, w[kw * sh.n + col], kw < sh.k && col < sh.n);
        workgroupBarrier();
        for (var i = 0u; i < 16u; i++) { acc = acc + ta[l.y][i] * tw[i][l.x]; }
        workgroupBarrier();
    }
    if (row < sh.m && col < sh.n) {
        var v = acc + bias[col];
        if (sh.relu != 0u) { v = max(v, 0.0); }
        c[row * sh.n + col] = v;
    }
}`;
const softmax = `
@group(0) @binding(0) var<storage, read_write> z: array<f32>;
@compute @workgroup_size(32)
fn main(@builtin(global_invocation_id) g: vec3u) {
    let r = g.x;
    if (r >= ${B}u) { return; }
    var m = z[r * ${OUT}u];
    for (var j = 1u; j < ${OUT}u; j++) { m = max(m, z[r * ${OUT}u + j]); }
    var s = 0.0;
    for (var j = 0u; j < ${OUT}u; j++) { s = s + exp(z[r * ${OUT}u + j] - m); }
    for (var j = 0u; j < ${OUT}u; j++) { z[r * ${OUT}u + j] = exp(z[r * ${OUT}u + j] - m) / s; }
}`;
const mm = dev.createComputePipeline({ layout: 'auto',
    compute: { module: dev.createShaderModule({ code: matmul }), entryPoint: 'main' } });
const sm = dev.createComputePipeline({ layout: 'auto',
    compute: { module: dev.createShaderModule({ code: softmax }), entryPoint: 'main' } });
const S = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
function buf(floats) {
    const b = dev.createBuffer({ size: floats.length * 4, usage: S });
    dev.queue.writeBuffer(b, 0, floats);
    return b;
}
let seed = 12345;
function rnd() { seed = (seed * 1103515245 + 12345) >>> 0; return (seed / 4294967296) - 0.5; }
const w1 = buf(Float32Array.from({ length: IN * HID }, () => rnd() * 0.2));
const b1 = buf(Float32Array.from({ length: HID }, () => rnd() * 0.1));
const w2 = buf(Float32Array.from({ length: HID * OUT }, () => rnd() * 0.2));
const b2 = buf(Float32Array.from({ length: OUT }, () => rnd() * 0.1));
const x = dev.createBuffer({ size: B * IN * 4, usage: S });
const h = dev.createBuffer({ size: B * HID * 4, usage: S });
const z = dev.createBuffer({ size: B * OUT * 4, usage: S });
function uniform(m, k, n, relu) {
    const u = dev.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    dev.queue.writeBuffer(u, 0, new Uint32Array([m, k, n, relu]));
    return u;
}
const u1 = uniform(B, IN, HID, 1), u2 = uniform(B, HID, OUT, 0);
const bind = (p, bufs) => dev.createBindGroup({ layout: p.getBindGroupLayout(0),
    entries: bufs.map((b, i) => ({ binding: i, resource: { buffer: b } })) });
const g1 = bind(mm, [u1, x, w1, b1, h]), g2 = bind(mm, [u2, h, w2, b2, z]), g3 = bind(sm, [z]);
const sums = [];
for (let batch = 0; batch < 3; batch++) {
    dev.queue.writeBuffer(x, 0, Float32Array.from({ length: B * IN }, () => rnd()));
    const enc = dev.createCommandEncoder();
    for (const [p, g, nx, ny] of [[mm, g1, HID / 16, B / 16], [mm, g2, 1, B / 16], [sm, g3, 1, 1]]) {
        const pass = enc.beginComputePass();
        pass.setPipeline(p);
        pass.setBindGroup(0, g);
        pass.dispatchWorkgroups(nx, ny);
        pass.end();
    }
    dev.queue.submit([enc.finish()]);
    sums.push(checksum(await readBuffer(dev, z, B * OUT * 4)));
}
console.log('mlp', sums.join(' '));
dev.destroy();
