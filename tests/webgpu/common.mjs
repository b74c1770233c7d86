// tests/webgpu/common.mjs — what the WebGPU test programs share: a device from Dawn (the npm
// package `webgpu`, installed by `scripts/webgpu.sh DIR`; REPRISE_WEBGPU=DIR says where), a
// read-back helper and a checksum printed the same way by every program, so a test compares one
// line with and without capture. Exit code 4 when Dawn is missing or finds no adapter (no
// Vulkan driver it accepts).
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

if (!process.env.REPRISE_WEBGPU) {
    console.error('REPRISE_WEBGPU is not set (the directory scripts/webgpu.sh installed into)');
    process.exit(4);
}
const { create, globals } = await import(
    pathToFileURL(join(process.env.REPRISE_WEBGPU, 'node_modules', 'webgpu', 'index.js')).href);

Object.assign(globalThis, globals);

// Module-level on purpose: dawn.node destroys its instance when this object is collected,
// and the devices of a collected instance crash the process (ProcessEvents on freed memory).
export const gpu = create([]);

export async function device(features = []) {
    const adapter = await gpu.requestAdapter();
    if (!adapter) {
        console.error('no WebGPU adapter (Dawn needs a newer Vulkan driver: scripts/mesa25.sh)');
        process.exit(4);
    }
    const dev = await adapter.requestDevice({ requiredFeatures: features });
    dev.addEventListener('uncapturederror', (e) => {
        console.error('WebGPU error:', e.error.message);
        process.exit(1);
    });
    return dev;
}

// The bytes of buffer src [0, size) after the queue's work so far, through a mapped copy.
export async function readBuffer(dev, src, size) {
    const rb = dev.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const enc = dev.createCommandEncoder();
    enc.copyBufferToBuffer(src, 0, rb, 0, size);
    dev.queue.submit([enc.finish()]);
    await rb.mapAsync(GPUMapMode.READ);
    const out = new Uint8Array(rb.getMappedRange().slice(0));
    rb.unmap();
    rb.destroy();
    return out;
}

// FNV-1a 64 of some bytes, as 16 hex digits.
export function checksum(bytes) {
    let h = 0xcbf29ce484222325n;
    for (const b of bytes) {
        h ^= BigInt(b);
        h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
    }
    return h.toString(16).padStart(16, '0');
}
