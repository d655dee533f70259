// A model past 4 GiB in a browser, Firefox ESR. Its GPU engine over lavapipe (the firefox-webgpu project) downloads the
// generated 4.32 GiB model into the model store (OPFS), reads it from there past 4 GiB (WORKERFS over the store's
// file, through its sync access handle), runs every layer on the adapter with the heap holding its embeddings, and
// answers as native llama.cpp does on the same file; loaded from a local File (a Blob) it answers the same. Its CPU
// engine (firefox-isolated: threads) starts on a wasm32 build, whose 4 GiB heap refuses the model (from the size the
// server announces, before any download), and moves to the memory64 build (hearth-mt64), which downloads it into the
// store, loads it from there into a heap past 4 GiB and answers as native llama.cpp does. (Firefox:
// Chromium's test contexts are off the record, and their model store ran out of room after 1.35 GB of the download.)
// Minutes each: only in `npm run test:large` (HEARTH_LARGE=1, which builds hearth-mt64), beside test/large/ in Node.
import { statSync } from 'node:fs';
import {
  answerDiff,
  COMPARABLE,
  GPU_LOGPROB_TOLERANCE,
  LOGPROB_TOLERANCE,
  NATIVE_LOGPROB_TOLERANCE,
} from '../test/compare.ts';
import { nativeAnswer } from '../test/fixtures/llama-server.ts';
import { ensureModel } from '../test/fixtures/models.ts';
import { expect, openEngine, test } from './fixtures.ts';

const question = [{ role: 'user' as const, content: 'What does a hearth keep?' }];
const request = { messages: question, temperature: 0, max_tokens: 4, ...COMPARABLE };

/** The generated model past 4 GiB: its path and size. */
async function pastTheHeap(): Promise<{ path: string; size: number }> {
  const path = await ensureModel('llama-past-4gib');
  const size = statSync(path).size;
  expect(size).toBeGreaterThan(4 * 2 ** 30);
  return { path, size };
}

test('a model past 4 GiB downloads into the model store, loads on the GPU engine and answers as native llama.cpp; as a local File too', async ({
  harness,
}) => {
  test.skip(test.info().project.name !== 'firefox-webgpu', 'the GPU engine: firefox-webgpu');
  test.setTimeout(40 * 60_000);
  const { path, size } = await pastTheHeap();
  await openEngine(harness, { backend: 'webgpu', cache: { persistent: false } });
  const t0 = Date.now();
  const info = await harness.evaluate(async () => {
    await window.engine.load('/test-models/llama-past-4gib.gguf', { nCtx: 512 });
    return window.engine.info();
  });
  console.log(
    `[past-4gib, browser] ${(size / 2 ** 30).toFixed(2)} GiB downloaded and loaded in ${((Date.now() - t0) / 1000).toFixed(0)} s; ` +
      `heap ${(info.wasmHeap!.size / 2 ** 20).toFixed(0)} MiB (malloc's peak ${(info.wasmHeap!.peak / 2 ** 20).toFixed(0)} MiB); storage ${info.storage}`,
  );
  expect(info.backend).toBe('webgpu');
  expect(info.gpu!.layers).toBe(info.gpu!.totalLayers);
  expect(info.wasmHeap!.size).toBeLessThan(0.15 * size);
  const onGpu = await harness.evaluate((r) => window.engine.chat.completions.create(r), request);
  const diff = answerDiff(onGpu, await nativeAnswer(path, request));
  console.log(`[past-4gib, browser] largest |Δ logprob| against native: ${diff.logprobs.toFixed(4)}`);
  expect(diff.tokens[0]).toEqual(diff.tokens[1]);
  expect(diff.logprobs).toBeLessThan(GPU_LOGPROB_TOLERANCE);

  // The same file as a local File (what <input type="file"> gives): read past 4 GiB through WORKERFS's Blob slices
  // rather than the store's sync access handle — the same answer.
  const fromFile = await harness.evaluate(async (r) => {
    const blob = await (await fetch('/test-models/llama-past-4gib.gguf')).blob();
    await window.engine.load(new File([blob], 'llama-past-4gib.gguf'), { nCtx: 512 });
    return window.engine.chat.completions.create(r);
  }, request);
  const same = answerDiff(fromFile, onGpu);
  console.log(
    `[past-4gib, browser] a local File: largest |Δ logprob| against the store's: ${same.logprobs.toFixed(4)}`,
  );
  expect(same.tokens[0]).toEqual(same.tokens[1]);
  expect(same.logprobs).toBeLessThan(LOGPROB_TOLERANCE);
});

test('a model past 4 GiB moves the CPU engine to the memory64 build, which loads it from the store and answers as native llama.cpp', async ({
  harness,
}) => {
  test.skip(test.info().project.name !== 'firefox-isolated', "the CPU engine's move: firefox-isolated");
  test.setTimeout(40 * 60_000);
  const { path, size } = await pastTheHeap();
  await openEngine(harness, { backend: 'wasm', threads: 2, cache: { persistent: false } });
  const before = await harness.evaluate(() => window.engine.info());
  expect(before.build).toMatch(/^mt(-relaxed)?$/);
  const t0 = Date.now();
  const info = await harness.evaluate(async () => {
    await window.engine.load('/test-models/llama-past-4gib.gguf', { nCtx: 512 });
    return window.engine.info();
  });
  console.log(
    `[past-4gib, memory64] ${(size / 2 ** 30).toFixed(2)} GiB downloaded and loaded in ${((Date.now() - t0) / 1000).toFixed(0)} s ` +
      `on ${info.build} (${info.buildReason}); heap ${(info.wasmHeap!.size / 2 ** 30).toFixed(2)} GiB; storage ${info.storage}`,
  );
  expect(info.build).toBe('mt64');
  expect(info.wasmHeap!.size).toBeGreaterThan(size);
  const ours = await harness.evaluate((r) => window.engine.chat.completions.create(r), request);
  const diff = answerDiff(ours, await nativeAnswer(path, request));
  console.log(`[past-4gib, memory64] largest |Δ logprob| against native: ${diff.logprobs.toFixed(4)}`);
  expect(diff.tokens[0]).toEqual(diff.tokens[1]);
  expect(diff.logprobs).toBeLessThan(NATIVE_LOGPROB_TOLERANCE);
});
