// The app's fit rule (src/app/fit.ts) and its catalogue (src/app/catalogue.json): what a visitor is told before any
// download — a model refused with the reason when it cannot run, the memory and speed of one that can, and the one
// recommended. The browser's side (the cards, a simulated small device) is e2e/catalogue.spec.ts.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { validEntries } from '../../src/app/catalogue.ts';
import { APP_CONTEXT, type DeviceFacts, kvBytes, modelFit, parseParams, recommend } from '../../src/app/fit.ts';

const GiB = 1024 ** 3;
const model = {
  bytes: 0.5 * GiB,
  stored: 0,
  layers: 24,
  kvHeads: 2,
  headDim: 64,
  context: 32768,
  vocab: 151936,
  embd: 896,
  quant: 'Q4_K_M',
};
const roomy: DeviceFacts = {
  deviceMemoryGiB: 8,
  freeStorage: 50 * GiB,
  backend: 'wasm',
  decodeBytesPerSecond: 20e9,
  gpuBindingLimit: null,
  tokenOverheadSeconds: 0,
};

describe('fit', () => {
  it('counts the weights, the KV cache at the app context and working memory, and estimates speed from the probe', () => {
    const f = modelFit(model, roomy);
    expect(f.fits).toBe(true);
    expect(f.context).toBe(APP_CONTEXT);
    expect(f.memory).toBeGreaterThan(model.bytes + kvBytes(model, APP_CONTEXT));
    expect(f.tokensPerSecond).toBeCloseTo(20e9 / model.bytes, 5);
    expect(f.speed).toBe('fast');
    // The GPU's fixed cost a token bounds a small model's speed.
    const gpu = modelFit(model, {
      ...roomy,
      backend: 'webgpu',
      decodeBytesPerSecond: 1e12,
      tokenOverheadSeconds: 0.006,
    });
    expect(gpu.tokensPerSecond).toBeLessThan(1 / 0.006);
    expect(gpu.backend).toBe('webgpu');
    expect(gpu.note).toBe('');
    // The token embedding (151,936 × 896 at ~4.5 bits: 73 MiB) over a GPU's binding limit: said, not refused.
    const small = modelFit(model, { ...roomy, backend: 'webgpu', gpuBindingLimit: 64 * 1024 ** 2 });
    expect(small).toMatchObject({
      fits: true,
      note: expect.stringMatching(/^its largest matrix \(about 73\.\d MiB\) is over this GPU's 64\.0 MiB buffer limit/),
    });
    expect(modelFit(model, { ...roomy, gpuBindingLimit: 64 * 1024 ** 2 }).note).toBe(''); // the CPU engine has no such limit
  });

  it('refuses, with the reason, what WebAssembly, the device or the storage cannot hold', () => {
    expect(modelFit({ ...model, bytes: 4 * GiB }, roomy)).toMatchObject({
      fits: false,
      reason: expect.stringMatching(
        /more than the CPU engine holds \(3\.50 GiB; WebAssembly has a 4 GB heap\): it needs a GPU/,
      ),
    });
    // Weights under the engine's limit, but a long KV cache takes the heap past 4 GiB.
    const wide = { ...model, bytes: 3.3 * GiB, layers: 48, kvHeads: 8, headDim: 128 };
    expect(modelFit(wide, roomy)).toMatchObject({
      fits: false,
      reason: expect.stringMatching(/WebAssembly gives 4\.00 GiB/),
    });
    expect(modelFit({ ...model, bytes: 1.2 * GiB }, { ...roomy, deviceMemoryGiB: 2 })).toMatchObject({
      fits: false,
      reason: expect.stringMatching(/this device has about 2 GB/),
    });
    expect(modelFit(model, { ...roomy, freeStorage: 0.2 * GiB })).toMatchObject({
      fits: false,
      reason: expect.stringMatching(/the download needs 512\.0 MiB of storage; this site may use 204\.8 MiB more/),
    });
    // What is already stored is not downloaded again.
    expect(modelFit({ ...model, stored: model.bytes }, { ...roomy, freeStorage: 0 }).fits).toBe(true);
    // A model whose size the Hub has not given yet is not refused, and not sized.
    expect(modelFit({ ...model, bytes: null }, roomy)).toMatchObject({ fits: true, memory: null });
  });

  it("on the GPU engine, counts the tab's share (the token embeddings) apart from the GPU's: an 8B model fits", () => {
    // Llama 3.1 8B at Q4_K_M: 4.9 GB, 32 layers, 8 KV heads of 128, 128,256 tokens × 4096.
    const llama8b = { ...model, bytes: 4.92e9, layers: 32, kvHeads: 8, headDim: 128, vocab: 128256, embd: 4096 };
    const gpuDevice = { ...roomy, backend: 'webgpu' as const, gpuBindingLimit: 2 * GiB };
    const onGpu = modelFit(llama8b, gpuDevice);
    const embedding = (128256 * 4096 * 4.5) / 8;
    expect(onGpu).toMatchObject({ fits: true, backend: 'webgpu', note: '' });
    expect(onGpu.memory).toBeLessThan(embedding + 0.5 * GiB); // the heap: the embeddings and working buffers
    // The rest of the weights and an f32 KV cache at the app's context go to the GPU.
    expect(onGpu.gpuMemory).toBe(4.92e9 - embedding + kvBytes(llama8b, APP_CONTEXT, 4));
    expect(onGpu.reason).toMatch(/of the tab's memory and 5\.\d\d GiB of the GPU's/);
    // The CPU engine cannot hold it: said before any download.
    expect(modelFit(llama8b, roomy)).toMatchObject({ fits: false, reason: expect.stringMatching(/it needs a GPU/) });
    // A GPU that binds less than the embeddings: the output matrix stays on the CPU too, as large again.
    const narrow = modelFit(llama8b, { ...gpuDevice, gpuBindingLimit: 128 * 1024 ** 2 });
    expect(narrow.memory! - onGpu.memory!).toBeCloseTo(embedding, -3);
    expect(narrow.note).toMatch(/over this GPU's 128\.0 MiB buffer limit/);
    // Embeddings over the heap's limit: refused on the GPU engine too, saying where the bytes would go.
    expect(modelFit(llama8b, { ...gpuDevice, maxModelBytes: 0.2 * GiB })).toMatchObject({
      fits: false,
      reason: expect.stringMatching(/on the GPU engine 2\d\d\.\d MiB of its weights stay in the tab's memory/),
    });
  });

  it('without a size from the Hub, estimates it from the parameter count: a download may start, or is refused first', () => {
    const unknown = { ...model, bytes: null, params: parseParams('7B') };
    // 7B at ~4.5 bits: about 3.7 GiB, over what the CPU engine holds.
    expect(modelFit(unknown, roomy)).toMatchObject({ fits: false, estimated: true, reason: /its about 3\.67 GiB/ });
    const small = modelFit({ ...unknown, params: parseParams('0.5B') }, roomy);
    expect(small).toMatchObject({ fits: true, estimated: true });
    expect(small.memory).toBeGreaterThan(0.5e9 * (4.5 / 8));
    expect(parseParams('360M')).toBe(360e6);
    expect(parseParams('1.7B')).toBe(1.7e9);
    expect(parseParams('big')).toBeNull();
  });

  it('recommends the largest quick model that fits and downloads in minutes, else the smallest that fits', () => {
    const entry = (bytes: number, device = roomy) => ({ bytes, fit: modelFit({ ...model, bytes }, device) });
    const models = [entry(0.4 * GiB), entry(1.1 * GiB), entry(2.4 * GiB), entry(3.6 * GiB)];
    expect(recommend(models)?.bytes).toBe(1.1 * GiB); // 2.4 GiB is over the first-download limit; 3.6 does not fit
    const slow = { ...roomy, decodeBytesPerSecond: 1e9 };
    expect(recommend([entry(0.4 * GiB, slow), entry(1.1 * GiB, slow)])?.bytes).toBe(0.4 * GiB);
    expect(recommend([entry(3.6 * GiB)])).toBeNull();
  });
});

describe('the catalogue', () => {
  it('has every entry complete, ids unique, at least one that reads images, and no sizes typed by hand', () => {
    const raw = JSON.parse(readFileSync('src/app/catalogue.json', 'utf8'));
    const entries = validEntries(raw);
    expect(entries).toHaveLength(raw.models.length);
    expect(new Set(entries.map((m) => m.id)).size).toBe(entries.length);
    expect(entries.some((m) => m.images && m.projector)).toBe(true);
    expect(JSON.stringify(raw)).not.toMatch(/"(size|bytes|sha256)"/);
    // A damaged entry is left out, not shown half.
    expect(validEntries({ models: [{ ...raw.models[0], shape: { layers: 0 } }, raw.models[1]] })).toHaveLength(1);
    expect(validEntries(null)).toEqual([]);
  });
});
