// tests/llama/llama.mjs MODEL.gguf [TOKENS] — llama.cpp's Vulkan backend (ggml-vulkan, the
// prebuilt linux-x64-vulkan binary of npm's node-llama-cpp) runs a model: a prompt evaluated in
// one batch, then TOKENS tokens (16) generated greedily one at a time. Prints the prompt's
// tokens and the generated ones: a deterministic function of the model and of what the GPU
// computed, compared with and without capture and across replays. Every layer is offloaded
// (gpuLayers "max"); on lavapipe ggml-vulkan needs GGML_VK_VISIBLE_DEVICES=0 (it skips CPU
// devices otherwise). Run with NODE_PATH or REPRISE_LLAMA=DIR (scripts/llama.sh's DIR).
import { createRequire } from "node:module";
import path from "node:path";

const dir = process.env.REPRISE_LLAMA;
if (!dir) {
    console.error("llama.mjs: set REPRISE_LLAMA to scripts/llama.sh's directory");
    process.exit(2);
}
const require = createRequire(path.join(dir, "package.json"));
const { getLlama } = await import(require.resolve("node-llama-cpp"));
const modelPath = process.argv[2];
const n = Number(process.argv[3] ?? 16);
const llama = await getLlama({ gpu: "vulkan", build: "never", usePrebuiltBinaries: true,
                               progressLogs: false, logLevel: "error", maxThreads: 1 });
if (llama.gpu !== "vulkan") {
    console.error(`llama.mjs: llama.cpp runs on ${llama.gpu}, not Vulkan`);
    process.exit(4);
}
const model = await llama.loadModel({ modelPath, gpuLayers: "max" });
const context = await model.createContext({ contextSize: 128, batchSize: 32, threads: 1 });
const sequence = context.getSequence();
const prompt = model.tokenize("the old man and the sea were there at the time of the year");
console.log("prompt " + prompt.join(" "));
const out = [];
for await (const t of sequence.evaluate(prompt, { temperature: 0 })) {
    out.push(t);
    if (out.length >= n)
        break;
}
console.log("generated " + out.join(" "));
await context.dispose();
await model.dispose();
await llama.dispose();
