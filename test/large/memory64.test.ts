// The memory64 CPU build (hearth-mt64: pthreads, SIMD128, a heap up to 16 GiB) for a model wasm32's 4 GiB heap cannot
// hold on the CPU engine. It computes as the wasm32 build does, to the logit (only addresses widen); it loads
// llama-past-4gib (4.32 GiB: the whole file in the heap, past 4 GiB) where the wasm32 build refuses it, and answers as
// native llama.cpp on the same file; its state is saved and restored like a small model's. Node 26 (memory64 without a
// flag), outside `npm test`: `npm run test:large` builds it (`npm run build:wasm -- --memory64`).
import 'fake-indexeddb/auto';
import { statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeEngine } from '../../src/node.ts';
import { answerDiff, LOGPROB_TOLERANCE, NATIVE_LOGPROB_TOLERANCE } from '../compare.ts';
import { ensureModel } from '../fixtures/models.ts';
import { ask, inspect, modelPath, NO_CACHE, next, testEngine, trackEngines } from '../helpers.ts';
import { nativeOnModel, QUESTION, restoredVsCold, topDiff } from './past-heap.ts';

const track = trackEngines();
const worst: Record<string, number> = {};
afterAll(() => console.log(`largest differences: ${JSON.stringify(worst)}`));
const THREADS = 2;
// A load reads 4.3 GB into the heap; each token reads it again on 2 threads.
const MINUTES = 15 * 60_000;

describe('the memory64 build', () => {
  it('computes as the wasm32 build does, to the logit', async () => {
    const conversation = next(QUESTION, 'A fire.', 'And what else?');
    const logits: Record<string, Float32Array> = {};
    for (const variant of ['mt', 'mt64'] as const) {
      const engine = await track(testEngine('qwen2-hello', { variant, threads: THREADS, ...NO_CACHE }));
      logits[variant] = (await inspect(engine).promptLogits({ messages: conversation })).logits;
      await engine.unload();
    }
    const d = topDiff(logits.mt!, logits.mt64!);
    worst['mt64 vs mt (logits)'] = d;
    expect(d).toBe(0);
  });

  describe('a model past 4 GiB on the CPU engine', () => {
    let cold: NodeEngine;
    beforeAll(async () => {
      await ensureModel('llama-past-4gib');
    }, MINUTES);

    it(
      'is refused by the wasm32 build before llama.cpp reads it, and loads into a heap past 4 GiB with memory64, answering as native llama.cpp',
      async () => {
        const size = statSync(modelPath('llama-past-4gib')).size;
        await expect(testEngine('llama-past-4gib', { variant: 'mt', ...NO_CACHE })).rejects.toMatchObject({
          code: 'too_large',
        });
        const t0 = performance.now();
        cold = await track(
          testEngine('llama-past-4gib', { variant: 'mt64', threads: THREADS, ...NO_CACHE, nCtx: 512 }),
        );
        const info = await cold.info();
        console.log(
          `[memory64] ${(size / 2 ** 30).toFixed(2)} GiB loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s; ` +
            `heap ${(info.wasmHeap!.size / 2 ** 30).toFixed(2)} GiB (malloc's peak ${(info.wasmHeap!.peak / 2 ** 30).toFixed(2)} GiB: llama.cpp maps the file)`,
        );
        expect(info.wasmHeap!.size).toBeGreaterThan(size); // the weights are in the heap, past wasm32's reach
        const t1 = performance.now();
        const ours = await ask(cold, QUESTION, { max_tokens: 4 });
        console.log(`[memory64] 4 tokens in ${((performance.now() - t1) / 1000).toFixed(1)} s`);
        const diff = answerDiff(ours, await nativeOnModel());
        worst['memory64 vs native (logprob)'] = Number(diff.logprobs.toFixed(4));
        expect(diff.tokens[0]).toEqual(diff.tokens[1]);
        expect(diff.logprobs).toBeLessThan(NATIVE_LOGPROB_TOLERANCE);
      },
      MINUTES,
    );

    it(
      'saves its state in IndexedDB and resumes after a reload as a cold engine reads the conversation',
      async () => {
        const d = await restoredVsCold({ variant: 'mt64', threads: THREADS }, cold, track);
        worst['restored vs cold (logits)'] = Number(d.toFixed(5));
        expect(d).toBeLessThan(LOGPROB_TOLERANCE);
      },
      MINUTES,
    );
  });
});
