// Hearth's relaxed-SIMD kernels (wasm/patches) against ggml's scalar reference, in the browsers that run them:
// wasm/kernels-test.cpp as built beside the relaxed single-thread build, run from its text in a page. (Node 20's V8
// validates relaxed SIMD behind a flag but computes its 8-bit dot product wrongly, so Node runs only the plain
// kernels: test/kernels.test.ts.) Then whole models: the relaxed and the plain build answer alike on every quantized
// test model. Chromium and Firefox, on the plain page.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir } from '../scripts/llama-source.mjs';
import { answerDiff, COMPARABLE } from '../test/compare.ts';
import type { ChatCompletion } from '../src/types.ts';
import { expect, test } from './fixtures.ts';

test("the relaxed-SIMD kernels give ggml's reference results on random data", async ({ harness }) => {
  const program = readFileSync(join(cacheDir, 'wasm-build', 'hearth-st-relaxed', 'kernels-test.cjs'), 'utf8');
  await harness.goto('/e2e/harness.html');
  const printed = await harness.evaluate(
    (source) =>
      new Promise<string>((resolve, reject) => {
        // A plain (not modularized) emscripten program reads the global Module; its one line of output is the report.
        Object.assign(globalThis, { Module: { print: resolve, printErr: () => {}, onAbort: reject } });
        // biome-ignore lint/complexity/noCommaOperator: (0, eval) is indirect eval, which runs the program as a classic script would
        // biome-ignore lint/security/noGlobalEval: the test's own emscripten program, read from the build folder
        (0, eval)(source);
      }),
    program,
  );
  const r = JSON.parse(printed) as Record<string, number>;
  expect(r.relaxed).toBe(1);
  // Every repacked kernel ran both ways (int16 and int32 accumulation, whichever this CPU picked: r.dot16).
  expect(r.cases).toBe(36);
  for (const type of ['q4_K', 'q5_K', 'q6_K', 'iq4_xs']) expect(r[`${type}_x8_cases`], type).toBe(16);
  expect(r.x4_max_abs).toBe(0);
  // The same integer sums as ggml's; float sums in another order.
  const repacked = ['', 'q4_0_', 'iq4_nl_', 'q5_0_', 'q5_1_', 'q4_K_', 'q5_K_', 'q6_K_', 'iq4_xs_'].flatMap((t) => [
    `${t}gemv`,
    `${t}gemm`,
  ]);
  for (const key of [...repacked, 'q4_0', 'q4_K', 'q5_0', 'q5_1', 'q5_K', 'q6_K', 'iq4_nl', 'iq4_xs']) {
    expect(r[`${key}_max_rel`], key).toBeLessThan(1e-5);
  }
  expect([r.q8_0_quantize_mismatches, r.q8_1_quantize_mismatches]).toEqual([0, 0]);
});

// Every quantized test model (256-wide rows: real K-quant and IQ4 blocks, not fallbacks).
const QUANTIZED = ['q4_0', 'q4_k_m', 'q5_k_m', 'q6_k', 'iq4_xs', 'iq4_nl', 'q5_0', 'q5_1', 'q8_0'].map(
  (t) => `qwen2-hello-256-${t}`,
);
// The same integer products, float sums in another order: where that flips the rounding of a quantized activation,
// the log-probabilities move. Bounded like the repacked Q8_0 kernels' logits (test/kernels.test.ts): within 1% of
// their magnitude (these models' unlikely tokens sit near -150; IQ4_NL moved by 0.5 there, the others by less).
const BUILD_TOLERANCE = 1e-2;

/** answerDiff's largest log-probability difference relative to the largest log-probability magnitude in `a`. */
function relativeDiff(a: ChatCompletion, b: ChatCompletion): { tokens: [string[], string[]]; relative: number } {
  const diff = answerDiff(a, b);
  const scale = Math.max(
    ...a.choices[0]!.logprobs!.content!.flatMap((c) => c.top_logprobs.map((t) => Math.abs(t.logprob))),
  );
  return { tokens: diff.tokens, relative: diff.logprobs / scale };
}

test('the relaxed and the plain build give the same answer, to the log-probability, on every quantized model', async ({
  harness,
}) => {
  test.setTimeout(300_000);
  await harness.goto('/e2e/harness.html');
  await harness.waitForFunction(() => window.hearthReady);
  const answers = await harness.evaluate(
    async ({ files, comparable }) => {
      const out: Record<string, { build: string | null; answer: unknown }> = {};
      for (const simd of ['auto', 'plain'] as const) {
        const engine = await window.hearth.createEngine({ simd });
        for (const file of files) {
          await engine.load(`/test-models/${file}.gguf`, { nCtx: 512 });
          const answer = await engine.chat.completions.create({
            messages: [{ role: 'user', content: 'Write a poem about the sea.' }],
            max_tokens: 8,
            temperature: 0,
            ...comparable,
          });
          out[`${simd} ${file}`] = { build: (await engine.info()).build, answer };
          await engine.unload();
        }
        engine.terminate();
      }
      return out;
    },
    { files: QUANTIZED, comparable: COMPARABLE },
  );
  for (const [i, file] of QUANTIZED.entries()) {
    const relaxed = answers[`auto ${file}`]!;
    const plain = answers[`plain ${file}`]!;
    expect([relaxed.build, plain.build]).toEqual(['st-relaxed', 'st']);
    const diff = relativeDiff(plain.answer as ChatCompletion, relaxed.answer as ChatCompletion);
    expect(diff.tokens[1], file).toEqual(diff.tokens[0]);
    expect(diff.relative, file).toBeLessThan(BUILD_TOLERANCE);
    // The comparison could fail: the same model quantized another way moves them by more.
    const neighbour = answers[`plain ${QUANTIZED[(i + 1) % QUANTIZED.length]}`]!;
    expect(
      relativeDiff(plain.answer as ChatCompletion, neighbour.answer as ChatCompletion).relative,
      file,
    ).toBeGreaterThan(BUILD_TOLERANCE);
  }
});
