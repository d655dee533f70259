// Hearth's relaxed-SIMD kernels (wasm/patches) against ggml's scalar reference, in the browsers that run them:
// wasm/kernels-test.cpp as built beside the relaxed single-thread build, run from its text in a page. (Node 20's V8
// validates relaxed SIMD behind a flag but computes its 8-bit dot product wrongly, so Node runs only the plain
// kernels: test/kernels.test.ts.) Chromium and Firefox, on the plain page.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir } from '../scripts/llama-source.mjs';
import { expect, test } from './fixtures.ts';

test('the relaxed-SIMD kernels give ggml\'s reference results on random data', async ({ harness }) => {
  const program = readFileSync(join(cacheDir, 'wasm-build', 'hearth-st-relaxed', 'kernels-test.cjs'), 'utf8');
  await harness.goto('/e2e/harness.html');
  const printed = await harness.evaluate((source) => new Promise<string>((resolve, reject) => {
    // A plain (not modularized) emscripten program reads the global Module; its one line of output is the report.
    Object.assign(globalThis, { Module: { print: resolve, printErr: () => {}, onAbort: reject } });
    (0, eval)(source);
  }), program);
  const r = JSON.parse(printed) as Record<string, number>;
  expect(r.relaxed).toBe(1);
  expect(r.cases).toBe(18);
  expect(r.x4_max_abs).toBe(0);
  // The same integer sums as ggml's; float sums in another order.
  for (const key of ['gemv', 'gemm', 'q4_0_gemv', 'q4_0_gemm', 'q4_0', 'q4_K', 'q5_0', 'q5_1', 'q5_K', 'q6_K', 'iq4_nl', 'iq4_xs']) {
    expect(r[`${key}_max_rel`], key).toBeLessThan(1e-5);
  }
});
