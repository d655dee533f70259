// Loading: bad files get a typed ModelLoadError that says what is wrong, and the engine loads a good model after;
// templates: the GGUF's own (ChatML, Llama 3 with its date) or ChatML when the model has none.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { countRelaxedDots, countSimdDots, RELAXED_PROBE } from '../wasm/simd-check.mjs';
import { GgufValueType } from '../src/core/gguf/reader.ts';
import { heapShare } from '../src/core/models/check.ts';
import { InvalidRequestError, ModelLoadError } from '../src/errors.ts';
import { createNodeEngine, defaultWasmDir, type NodeEngine } from '../src/node.ts';
import { writeGguf } from './fixtures/gguf-writer.ts';
import { cacheDir } from '../scripts/llama-source.mjs';
import { inspect, modelPath } from './helpers.ts';

const dir = join(cacheDir, 'bad-models');
let engine: NodeEngine;

beforeAll(async () => {
  mkdirSync(dir, { recursive: true });
  const good = readFileSync(modelPath('qwen2-hello'));
  writeFileSync(join(dir, 'notes.gguf'), 'These are my notes, not a model.\n'.repeat(10));
  writeFileSync(join(dir, 'half.gguf'), good.subarray(0, good.length >> 1));
  writeFileSync(join(dir, 'header-cut.gguf'), good.subarray(0, 4096));
  writeGguf(
    join(dir, 'alien.gguf'),
    [['general.architecture', { type: GgufValueType.STRING, value: 'alien-arch' }]],
    [],
  );
  writeFileSync(join(dir, 'unknown-type.gguf'), withTensorType(good, 'blk.0.ffn_down.weight', 31)); // Q4_0_4_4, removed
  engine = await createNodeEngine({ maxModelBytes: 50e6 });
});
afterAll(() => engine.unload());

const answer = async () =>
  (await engine.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }] })).choices[0]!.message.content;

describe('bad model files', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['notes.gguf', 'not_gguf', /not a GGUF model/],
    ['half.gguf', 'truncated', /truncated/],
    ['header-cut.gguf', 'truncated', /truncated/],
    [
      'alien.gguf',
      'unsupported_architecture',
      /alien\.gguf is a model of architecture 'alien-arch', which this build .* Pick a model/,
    ],
    ['unknown-type.gguf', 'unsupported_quantization', /blk\.0\.ffn_down\.weight as ggml type 31, .* Pick a Q4_K_M/],
    ['missing.gguf', 'not_found', /no model file/],
  ];
  for (const [file, code, message] of cases) {
    it(`${file} → ModelLoadError(${code}); a good model loads afterwards`, async () => {
      const err = await engine.load({ path: join(dir, file) }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ModelLoadError);
      expect((err as ModelLoadError).code).toBe(code);
      expect((err as Error).message).toMatch(message);
      await expect(answer()).rejects.toThrow(InvalidRequestError); // nothing half-loaded stays behind
      await engine.load({ path: modelPath('qwen2-hello') });
      expect(await answer()).toBe('Hello, world!');
    });
  }

  it('refuses weights without a wasm SIMD kernel unless allowScalarKernels, then answers as the f32 model', async () => {
    const e = await createNodeEngine(); // the f32 model is larger than `engine` takes
    const say = async () =>
      (await e.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }] })).choices[0]!.message.content;
    const path = modelPath('qwen2-hello-256-iq3_s');
    const err = await e.load({ path }).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(ModelLoadError);
    expect((err as ModelLoadError).code).toBe('unsupported_quantization');
    expect((err as Error).message).toMatch(/has IQ3_S weights, .* Pick a Q4_K_M.* allowScalarKernels: true/);
    await e.load({ path: modelPath('qwen2-hello-256') });
    const f32 = await say();
    await e.load({ path }, { allowScalarKernels: true });
    expect(await say()).toBe(f32);
    await e.unload();
  });

  it('refuses a model whose KV cache at the smallest context exceeds the budget', async () => {
    const err = await engine
      .load({ path: modelPath('qwen2-hello') }, { kvBudgetBytes: 100_000 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelLoadError);
    expect((err as ModelLoadError).code).toBe('kv_too_large');
    expect((err as Error).message).toMatch(
      /holds fewer than 1024 tokens .* raise kvBudgetBytes, or pick a smaller model/,
    );
    await engine.load({ path: modelPath('qwen2-hello') });
    expect(await answer()).toBe('Hello, world!');
  });

  it('refuses a file larger than the memory limit before reading it', async () => {
    const small = await createNodeEngine({ maxModelBytes: 1e6 });
    const err = await small.load({ path: modelPath('qwen2-hello') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelLoadError);
    expect((err as ModelLoadError).code).toBe('too_large');
    expect((err as Error).message).toMatch(/holds models up to .* smaller model/);
    await small.load({ path: modelPath('spm-notemplate') }).catch(() => {}); // 5 MB: also too large
    expect((await small.info()).model).toBeNull();
  });

  it("on the GPU engine, counts the heap's share of a model: its input embeddings and tensors over the binding limit", () => {
    const F16 = 1;
    const tensor = (name: string, dims: number[]) => ({ name, dims, type: F16, offset: 0 });
    const header = (tensors: ReturnType<typeof tensor>[]) => ({
      version: 3,
      kv: new Map(),
      tensors,
      dataOffset: 0,
      expectedSize: null,
    });
    // An 8B model's shapes in f16, split in two files: the 1 GB embeddings stay on the CPU, and so does the output
    // matrix on an adapter that binds at most 128 MiB (lavapipe's limit); a layer's 112 MiB matrix goes to the GPU.
    const parts = [
      header([tensor('token_embd.weight', [4096, 128256]), tensor('blk.0.ffn_up.weight', [4096, 14336])]),
      header([tensor('output.weight', [4096, 128256]), tensor('output_norm.weight', [4096])]),
    ];
    const embeddings = 4096 * 128256 * 2;
    expect(heapShare(parts, 128 * 2 ** 20)).toEqual({
      bytes: 2 * embeddings,
      embeddings,
      unbindable: ['output.weight'],
    });
    expect(heapShare(parts, 2 ** 31)).toEqual({ bytes: embeddings, embeddings, unbindable: [] });
  });
});

describe('chat templates', () => {
  it("uses the GGUF template (Llama 3: headers, today's date) and stops at <|eot_id|>", async () => {
    const e = await createNodeEngine();
    const info = await e.load({ path: modelPath('llama3-tiny') });
    expect(info.chatTemplate).toContain('<|start_header_id|>');
    expect(info.eogTokens.length).toBeGreaterThanOrEqual(2);
    const res = await e.chat.completions.create({
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 8,
      temperature: 0,
    });
    expect(res.usage.prompt_tokens).toBeGreaterThan(20); // system header with "Cutting Knowledge Date" and today's date
    await e.unload();
  });

  it('falls back to ChatML with a warning when the model has no template', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const e = await createNodeEngine();
    const info = await e.load({ path: modelPath('spm-notemplate') });
    expect(info.chatTemplate).toBeNull();
    expect(warn).toHaveBeenCalledWith(expect.stringMatching(/no chat template.*ChatML/));
    warn.mockRestore();
    const messages = [{ role: 'user' as const, content: 'Hi' }];
    // The model reads a ChatML prompt (its SentencePiece vocabulary has no ChatML tokens: they are plain text).
    const prompt = inspect(e).prompt({ messages });
    expect(prompt.text).toBe('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n');
    const res = await e.chat.completions.create({ messages, max_tokens: 8, temperature: 0 });
    expect(res.usage.prompt_tokens).toBe(prompt.tokens.length);
    expect(res.usage.completion_tokens).toBeGreaterThan(0);
    await e.unload();
  });

  it('passes tools to the template', async () => {
    await engine.load({ path: modelPath('qwen2-hello') });
    const plain = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 1 });
    const tools = [{ type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object' } } }];
    const withTools = await engine.chat.completions.create({
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 1,
      tools,
    });
    // Qwen2.5's template lists the tools in the system turn.
    expect(withTools.usage.prompt_tokens).toBeGreaterThan(plain.usage.prompt_tokens + 50);
  });
});

describe('wasm build', () => {
  it("uses ggml's wasm SIMD kernels (the generic fallback is ~4x slower), and relaxed SIMD only in the relaxed builds", () => {
    for (const variant of ['st', 'mt', 'st-relaxed', 'mt-relaxed']) {
      const wasm = readFileSync(join(defaultWasmDir, `hearth-${variant}.wasm`));
      expect(countSimdDots(wasm), variant).toBeGreaterThan(20);
      // Node 20 has relaxed SIMD off: a browser like that (WebKit) must accept the plain builds.
      if (!WebAssembly.validate(RELAXED_PROBE)) {
        expect(WebAssembly.validate(wasm), variant).toBe(!variant.endsWith('-relaxed'));
      }
      if (variant.endsWith('-relaxed')) expect(countRelaxedDots(wasm), variant).toBeGreaterThan(20);
    }
  });
});

/** `gguf` with tensor `name`'s type id replaced (in its tensor info: name, n_dims u32, dims u64 each, type u32). */
function withTensorType(gguf: Buffer, name: string, type: number): Buffer {
  const out = Buffer.from(gguf);
  const at = out.indexOf(Buffer.from(name)) + name.length;
  const nDims = out.readUInt32LE(at);
  out.writeUInt32LE(type, at + 4 + 8 * nDims);
  return out;
}
