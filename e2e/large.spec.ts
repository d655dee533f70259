// A model past 4 GiB in a browser: Firefox ESR's GPU engine over lavapipe (the firefox-webgpu project) downloads the
// generated 4.32 GiB model into the model store (OPFS), reads it from there past 4 GiB (WORKERFS over the store's
// file, through its sync access handle), runs every layer on the adapter with the heap holding its embeddings, and
// answers as native llama.cpp does on the same file. Minutes on lavapipe: only in `npm run test:large`
// (HEARTH_LARGE=1), beside test/large/ in Node.
import { statSync } from 'node:fs';
import { answerDiff, COMPARABLE, GPU_LOGPROB_TOLERANCE } from '../test/compare.ts';
import { startLlamaServer } from '../test/fixtures/llama-server.ts';
import { ensureModel } from '../test/fixtures/models.ts';
import { expect, openEngine, test } from './fixtures.ts';

const question = [{ role: 'user' as const, content: 'What does a hearth keep?' }];
const request = { messages: question, temperature: 0, max_tokens: 4, ...COMPARABLE };

test('a model past 4 GiB downloads into the model store, loads on the GPU engine and answers as native llama.cpp', async ({
  harness,
}) => {
  test.setTimeout(40 * 60_000);
  const path = await ensureModel('llama-past-4gib');
  const size = statSync(path).size;
  expect(size).toBeGreaterThan(4 * 2 ** 30);
  await openEngine(harness, { backend: 'webgpu', cache: { persistent: false } });
  const t0 = Date.now();
  const info = await harness.evaluate(async () => {
    await window.engine.load('/test-models/llama-past-4gib.gguf', { nCtx: 512 });
    return window.engine.info();
  });
  console.log(
    `[past-4gib, browser] ${(size / 2 ** 30).toFixed(2)} GiB downloaded and loaded in ${((Date.now() - t0) / 1000).toFixed(0)} s; ` +
      `heap peak ${(info.wasmHeap!.peak / 2 ** 20).toFixed(0)} MiB; storage ${info.storage}`,
  );
  expect(info.backend).toBe('webgpu');
  expect(info.gpu!.layers).toBe(info.gpu!.totalLayers);
  expect(info.wasmHeap!.peak).toBeLessThan(0.1 * size);
  const onGpu = await harness.evaluate((r) => window.engine.chat.completions.create(r), request);
  const server = await startLlamaServer({ model: path, args: ['-c', '512'], timeoutMs: 180_000 });
  try {
    const res = await fetch(`${server.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
    });
    const diff = answerDiff(onGpu, await res.json());
    console.log(`[past-4gib, browser] largest |Δ logprob| against native: ${diff.logprobs.toFixed(4)}`);
    expect(diff.tokens[0]).toEqual(diff.tokens[1]);
    expect(diff.logprobs).toBeLessThan(GPU_LOGPROB_TOLERANCE);
  } finally {
    await server.stop();
  }
});
