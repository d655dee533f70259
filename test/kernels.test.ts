// Hearth's own ggml kernels (wasm/patches): for Q8_0, four-rows-per-call dot products and GEMV/GEMM over weights
// repacked four rows at a time, checked against ggml's row-at-a-time dot product on random data (exactly), then
// inside a model (plain vs repacked weights), and by a decisive Q8_0 model's one right answer; for IQ4_NL and
// IQ4_XS, SIMD dot products (ggml has only scalar code for them on wasm), checked against that scalar code (and in a
// model by test/quants.test.ts); the rewritten Q4_0, Q4_K and Q6_K dot products and ggml's Q5_0 and Q5_K, the same
// way; GEMV/GEMM over Q4_0 weights repacked four rows at a time, like Q8_0's; the activation quantizers against
// ggml's reference. These are the plain SIMD128 build's; the relaxed-SIMD build's (with IQ4_NL's repacked GEMV/GEMM,
// which only those builds have) run in the browsers that have relaxed SIMD (e2e/kernels.spec.ts).
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cacheDir } from '../scripts/llama-source.mjs';
import type { Llama } from '../src/backends/llamacpp/binding/llama.ts';
import { LlamaModel } from '../src/backends/llamacpp/binding/model.ts';
import { LlamaContext } from '../src/backends/llamacpp/binding/context.ts';
import { openLlama, relDiff, testEngine } from './helpers.ts';

let llama: Llama;
const loaded: Array<{ model: LlamaModel; ctx: LlamaContext }> = [];

async function open(file: string, repack: boolean) {
  const mark = llama.log.mark();
  const model = (await LlamaModel.load(llama, `/models/${file}.gguf`, { repack }))!;
  expect(model).not.toBeNull();
  const repacked = llama.log.since(mark).filter((l) => l.startsWith('repack: repack tensor')).length;
  const ctx = await LlamaContext.create(model, {
    nCtx: 256,
    nBatch: 64,
    nUbatch: 64,
    nSeqMax: 1,
    threads: 1,
    typeK: 'f16',
    typeV: 'f16',
    flashAttn: -1,
  });
  loaded.push({ model, ctx });
  return { model, ctx, repacked };
}

async function logitsAfter(ctx: LlamaContext, tokens: ArrayLike<number>, from: number): Promise<Float32Array> {
  const n = tokens.length;
  expect(
    await ctx.decode(
      tokens,
      Array.from({ length: n }, (_, i) => from + i),
      new Array(n).fill(0),
      Array.from({ length: n }, (_, i) => i === n - 1),
    ),
  ).toBe(0);
  return ctx.logits(n - 1);
}

let report: Record<string, number> | null = null;
/** wasm/kernels-test.cpp's JSON, run once. Built by npm run build:wasm beside the single-thread build; Node's fetch
 * would refuse its file path. */
function kernelsReport(): Record<string, number> {
  // A sanitizer build's kernel test lies beside its builds (wasm/build.mjs --sanitize).
  const program = process.env.HEARTH_WASM_DIR
    ? join(process.env.HEARTH_WASM_DIR, 'kernels-test.cjs')
    : join(cacheDir, 'wasm-build', 'hearth-st', 'kernels-test.cjs');
  report ??= JSON.parse(execFileSync(process.execPath, ['--no-experimental-fetch', program], { encoding: 'utf8' }));
  return report!;
}

beforeAll(async () => {
  llama = await openLlama();
});

afterAll(async () => {
  for (const { model, ctx } of loaded) {
    ctx.free();
    model.free();
  }
});

describe('kernels', () => {
  it("match ggml's reference dot product on random data (wasm/kernels-test.cpp)", async () => {
    const r = kernelsReport();
    expect(r.cases).toBe(18);
    expect(r.x4_max_abs).toBe(0); // same arithmetic in the same order
    expect(r.gemv_max_rel).toBeLessThan(1e-5); // float additions in another order
    expect(r.gemm_max_rel).toBeLessThan(1e-5);
    expect(r.q4_0_gemv_max_rel).toBeLessThan(1e-5);
    expect(r.q4_0_gemm_max_rel).toBeLessThan(1e-5);
    // ggml's reference code in this build (only the relaxed builds repack IQ4_NL): the test's interleaving checked.
    expect(r.iq4_nl_gemv_max_rel).toBeLessThan(1e-5);
    expect(r.iq4_nl_gemm_max_rel).toBeLessThan(1e-5);
    // Nor the K-quants: nothing to check here.
    for (const type of ['q4_K', 'q5_K', 'q6_K']) expect(r[`${type}_x8_cases`], type).toBe(0);
  });

  it("Q4_0, Q4_K, Q5_0, Q5_1, Q5_K, Q6_K, IQ4_NL and IQ4_XS dot products match ggml's scalar reference on random data", async () => {
    const r = kernelsReport();
    expect(r.relaxed).toBe(0); // the plain build's kernels (the relaxed ones: e2e/kernels.spec.ts)
    // Same integer products; float sums in another order (per block vs per super-block).
    for (const type of ['q4_0', 'q4_K', 'q5_0', 'q5_1', 'q5_K', 'q6_K', 'iq4_nl', 'iq4_xs']) {
      expect(r[`${type}_max_rel`], type).toBeLessThan(1e-5);
    }
  });

  // The relaxed builds' kernels compute in browsers only (e2e/kernels.spec.ts), but which tensors a build repacks is
  // decided at load, which Node can do with relaxed SIMD switched on.
  it("the relaxed builds repack every type the Hub's files hold, four bytes at a time; the plain builds only Q4_0 and Q8_0, eight", async () => {
    const types = ['q4_0', 'q4_k_m', 'q5_k_m', 'q6_k', 'iq4_xs', 'iq4_nl', 'q5_0', 'q5_1', 'q8_0'];
    const models = types.map((t) => `qwen2-hello-256-${t}`);
    const printed = execFileSync(
      process.execPath,
      [
        '--experimental-wasm-relaxed-simd',
        '--import',
        'tsx',
        join(import.meta.dirname, 'repacked-tensors.ts'),
        ...models,
      ],
      { encoding: 'utf8' },
    );
    const r = JSON.parse(printed) as Record<string, Record<string, { tensors: number; layouts: string[] }>>;
    // 7 matrices x 2 layers, and the output (Q6_K, as the quantizer writes it, but in the Q8_0 file).
    const main: Record<string, string> = {
      q4_0: 'q4_0_4x4',
      q4_k_m: 'q4_K_8x4',
      q5_k_m: 'q5_K_8x4',
      q6_k: 'q6_K_8x4',
      iq4_xs: 'iq4_xs_8x4',
      iq4_nl: 'iq4_nl_4x4',
      q5_0: 'q5_0_4x4',
      q5_1: 'q5_1_4x4',
      q8_0: 'q8_0_4x4',
    };
    for (const t of types) {
      const got = r['st-relaxed']![`qwen2-hello-256-${t}`]!;
      expect(got.tensors, t).toBe(15);
      expect(got.layouts.sort(), t).toEqual([...new Set([main[t]!, t === 'q8_0' ? 'q8_0_4x4' : 'q6_K_8x4'])].sort());
    }
    for (const t of types.filter((x) => x !== 'q4_0' && x !== 'q8_0')) {
      expect(r.st![`qwen2-hello-256-${t}`]!.tensors, t).toBe(0);
    }
    expect(r.st!['qwen2-hello-256-q4_0']).toEqual({ tensors: 14, layouts: ['q4_0_4x8'] });
    expect(r.st!['qwen2-hello-256-q8_0']).toEqual({ tensors: 15, layouts: ['q8_0_4x8'] });
  });

  it("quantize activations to the same int8 codes as ggml's reference (rounded, not truncated)", async () => {
    const r = kernelsReport();
    expect(r.q8_0_quantize_mismatches).toBe(0);
    expect(r.q8_1_quantize_mismatches).toBe(0);
  });

  // Q8_0: 4 attention + 3 FFN matrices x 2 layers, and the output; Q4_0: the same without the output, which the
  // quantizer writes in Q6_K.
  it.each([
    ['qwen2-hello-q8', 15],
    ['qwen2-hello-256-q4_0', 14],
  ])(
    '%s: repacked and plain weights give the same logits for a prompt and for the next token',
    async (file, tensors) => {
      const plain = await open(file, false);
      const packed = await open(file, true);
      expect(plain.repacked).toBe(0);
      expect(packed.repacked).toBe(tensors);
      const prompt = plain.model.tokenize(
        '<|im_start|>user\nWrite a poem about the sea, please.<|im_end|>\n<|im_start|>assistant\n',
        false,
        true,
      );
      expect(prompt.length).toBeGreaterThan(8); // a batch: GEMM on the repacked side
      const a = await logitsAfter(plain.ctx, prompt, 0);
      const b = await logitsAfter(packed.ctx, prompt, 0);
      // Same integer products in another float order; where that flips the rounding of a quantized activation the
      // logits move by about 0.1% (measured); wrong kernels move them by tens of percent.
      expect(relDiff(a, b)).toBeLessThan(1e-2);
      const next = [7000];
      expect(
        relDiff(await logitsAfter(plain.ctx, next, prompt.length), await logitsAfter(packed.ctx, next, prompt.length)),
      ).toBeLessThan(1e-2);
    },
  );

  it('a Q8_0 model answers exactly like its f16/f32 twin', async () => {
    const engine = await testEngine('qwen2-hello-q8', { nCtx: 1024 });
    const res = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], temperature: 0 });
    expect(res.choices[0]!.message.content).toBe('Hello, world!');
    await engine.unload();
  });
});
