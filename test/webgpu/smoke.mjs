// Scratch check (run under scripts/webgpu-node.mjs): greedy tokens and logits of the WebGPU build against the
// single-thread CPU build, straight through the exports.
import { createRequire } from 'node:module';
import { dirname, join, basename } from 'node:path';

const require = createRequire(import.meta.url);
const { create, globals } = await import(process.env.HEARTH_WEBGPU);
Object.assign(globalThis, globals);
Object.defineProperty(globalThis.navigator, 'gpu', { value: create([]) });

const modelPath = process.argv[2];
const steps = Number(process.argv[3] ?? 8);
const root = join(import.meta.dirname, '../../public/hearth');

async function open(name, gpuLayers) {
  const mod = await require(join(root, `${name}.js`))({ print: () => {}, printErr: () => {} });
  mod.hearthLog = (level, text) => level >= 3 && process.stderr.write(`[${name}] ${text}`);
  await mod._hearth_init();
  const gpus = mod._hearth_gpu_devices ? await mod._hearth_gpu_devices() : 0;
  mod.FS.mkdir('/m');
  mod.FS.mount(mod.NODEFS, { root: dirname(modelPath) }, '/m');
  const str = (s) => {
    const b = Buffer.from(`${s}\0`);
    const p = mod._malloc(b.length);
    mod.HEAPU8.set(b, p);
    return p;
  };
  const model = await mod._hearth_model_load(str(`/m/${basename(modelPath)}`), 0, 0, gpuLayers);
  if (!model) throw new Error(`${name}: model did not load`);
  const ctx = await mod._hearth_context_new(model, 256, 64, 64, 1, 1, 1, 1, -1, 1);
  if (!ctx) throw new Error(`${name}: no context`);
  const io = mod._malloc(64 * 13);
  const nVocab = mod._hearth_vocab_n_tokens(model);
  return {
    gpus,
    name: gpus ? mod.UTF8ToString(mod._hearth_gpu_name()) : 'cpu',
    async decode(tokens, pos0) {
      const i32 = new Int32Array(mod.HEAPU8.buffer);
      const t = io >> 2;
      for (let i = 0; i < tokens.length; i++) {
        i32[t + i] = tokens[i];
        i32[t + 64 + i] = pos0 + i;
        i32[t + 128 + i] = 0;
        mod.HEAPU8[io + 192 * 4 + i] = i === tokens.length - 1 ? 1 : 0;
      }
      const t0 = performance.now();
      const status = await mod._hearth_decode(ctx, io, io + 256, io + 512, io + 768, tokens.length);
      const ms = performance.now() - t0;
      if (status !== 0) throw new Error(`${name}: decode ${status}`);
      const p = mod._hearth_logits(ctx, tokens.length - 1);
      return { logits: new Float32Array(mod.HEAPU8.buffer, p, nVocab).slice(), ms };
    },
  };
}

const argmax = (a) => a.reduce((m, v, i) => (v > a[m] ? i : m), 0);
const cpu = await open('hearth-st', 0);
const gpu = await open('hearth-webgpu', 999);
console.log(`gpu devices: ${gpu.gpus} (${gpu.name})`);
let tokens = [1, 2, 3, 4, 5, 6, 7, 8];
let pos = 0;
let worst = 0;
const picked = { cpu: [], gpu: [] };
for (let step = 0; step < steps; step++) {
  const a = await cpu.decode(tokens, pos);
  const b = await gpu.decode(tokens, pos);
  let diff = 0;
  for (let i = 0; i < a.logits.length; i++) diff = Math.max(diff, Math.abs(a.logits[i] - b.logits[i]));
  worst = Math.max(worst, diff);
  const ta = argmax(a.logits);
  picked.cpu.push(ta);
  picked.gpu.push(argmax(b.logits));
  console.log(
    `step ${step}: n=${tokens.length} max |Δlogit| ${diff.toFixed(5)} cpu ${a.ms.toFixed(1)} ms gpu ${b.ms.toFixed(1)} ms`,
  );
  pos += tokens.length;
  tokens = [ta];
}
console.log(JSON.stringify({ same: picked.cpu.join() === picked.gpu.join(), worst, ...picked }));
