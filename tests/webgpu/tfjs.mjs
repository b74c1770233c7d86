// tests/webgpu/tfjs.mjs — an ML framework we did not write, on Dawn: TensorFlow.js's WebGPU
// backend (installed beside Dawn by scripts/webgpu.sh) runs a small convolutional network's
// inference (convolutions, bias, ReLU, max and average pooling, a dense layer, softmax) on a
// batch, then a mix of the kernels such runtimes generate (batch norm, depthwise and transposed
// convolution, bilinear resize, gather, cumulative sum, arg max, top-k, reductions, transpose,
// concat, pad, element-wise chains, einsum, slices, select, range). Weights and inputs come from
// a fixed generator. Prints one checksum line of everything read back.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { gpu, checksum } from './common.mjs';

// the framework finds WebGPU where a browser has it
globalThis.navigator = { gpu, userAgent: 'node' };
const require = createRequire(join(process.env.REPRISE_WEBGPU, 'node_modules', 'tfjs.cjs'));
const tf = require('@tensorflow/tfjs-core');
require('@tensorflow/tfjs-backend-webgpu');
if (!(await tf.setBackend('webgpu'))) {
    console.error('tfjs: the WebGPU backend did not initialise (no adapter?)');
    process.exit(4);
}
await tf.ready();

let seed = 1;
function tensor(shape) { // values in [-0.1, 0.1) from a linear congruential generator
    const a = new Float32Array(shape.reduce((x, y) => x * y, 1));
    for (let i = 0; i < a.length; i++) {
        seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
        a[i] = ((seed >>> 8) / 16777216 - 0.5) * 0.2;
    }
    return tf.tensor(a, shape);
}

const x = tensor([4, 28, 28, 1]);
let h = tf.relu(tf.add(tf.conv2d(x, tensor([3, 3, 1, 8]), 1, 'same'), tensor([8])));
h = tf.maxPool(h, 2, 2, 'valid');
h = tf.relu(tf.add(tf.conv2d(h, tensor([3, 3, 8, 16]), 1, 'same'), tensor([16])));
h = tf.avgPool(h, 2, 2, 'valid');
h = tf.reshape(h, [4, 7 * 7 * 16]);
const outs = [tf.softmax(tf.add(tf.matMul(h, tensor([7 * 7 * 16, 10])), tensor([10])))];

outs.push(tf.batchNorm(tensor([2, 8, 8, 4]), tensor([4]), tf.abs(tensor([4])), tensor([4]),
                       tensor([4]), 1e-3));
outs.push(tf.depthwiseConv2d(tensor([1, 16, 16, 4]), tensor([3, 3, 4, 2]), 1, 'same'));
outs.push(tf.conv2dTranspose(tensor([1, 8, 8, 4]), tensor([3, 3, 2, 4]), [1, 16, 16, 2], 2,
                             'same'));
outs.push(tf.image.resizeBilinear(tensor([1, 8, 8, 3]), [13, 11]));
outs.push(tf.gather(tensor([32, 16]), tf.tensor1d([3, 1, 31, 7, 7], 'int32')));
outs.push(tf.cumsum(tensor([64])));
outs.push(tf.cast(tf.argMax(tensor([16, 33]), 1), 'float32'));
outs.push(tf.topk(tensor([100]), 5).values);
outs.push(tf.sum(tensor([17, 19]), 0));
outs.push(tf.max(tensor([17, 19]), 1));
outs.push(tf.transpose(tensor([3, 5, 7]), [2, 0, 1]));
outs.push(tf.concat([tensor([4, 3]), tensor([4, 5])], 1));
outs.push(tf.pad(tensor([3, 3]), [[1, 2], [2, 1]]));
outs.push(tf.tanh(tf.exp(tensor([128]))));
outs.push(tf.einsum('ij,jk->ik', tensor([5, 6]), tensor([6, 7])));
outs.push(tf.slice(tensor([10, 10]), [2, 3], [5, 4]));
outs.push(tf.stridedSlice(tensor([10, 10]), [1, 1], [9, 9], [2, 3]));
outs.push(tf.where(tf.greater(tensor([50]), 0), tensor([50]), tensor([50])));
outs.push(tf.mean(tf.sigmoid(tf.matMul(tensor([64, 64]), tensor([64, 64])))));
outs.push(tf.mul(tf.range(0, 100, 1), 0.5));

const data = await Promise.all(outs.map((t) => t.data()));
const bytes = data.map((d) => new Uint8Array(new Float32Array(d).buffer));
const all = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0));
bytes.reduce((at, b) => (all.set(b, at), at + b.length), 0);
console.log(`tfjs ${checksum(all)}`);
