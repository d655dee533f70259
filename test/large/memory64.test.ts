// The memory64 CPU build (hearth-mt64: pthreads, SIMD128, a heap up to 16 GiB) for a model wasm32's 4 GiB heap cannot
// hold on the CPU engine. It computes as the wasm32 build does, to the logit (only addresses widen); it loads
// llama-past-4gib (4.32 GiB: the whole file in the heap, past 4 GiB) where the wasm32 build refuses it, and answers as
// native llama.cpp on the same file; its state is saved and restored like a small model's. Node 26 (memory64 without a
// flag), outside `npm test`: `npm run test:large` builds it (`npm run build:wasm -- --memory64`).
import 'fake-indexeddb/auto';
import { statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeEngine } from '../../src/node.ts';
import type { ChatMessage } from '../../src/types.ts';
import { answerDiff, COMPARABLE, LOGPROB_TOLERANCE, NATIVE_LOGPROB_TOLERANCE } from '../compare.ts';
import { ensureModel } from '../fixtures/models.ts';
import { nativeAnswer } from '../fixtures/llama-server.ts';
import { ask, inspect, modelPath, NO_CACHE, newDb, next, reply, testEngine, trackEngines } from '../helpers.ts';

const track = trackEngines();
const question: ChatMessage[] = [{ role: 'user', content: 'What does a hearth keep?' }];
const worst: Record<string, number> = {};
afterAll(() => console.log(`largest differences: ${JSON.stringify(worst)}`));
const THREADS = 2;
// A load reads 4.3 GB into the heap; each token reads it again on 2 threads.
const MINUTES = 15 * 60_000;

/** The largest difference between two logit vectors at the first's five likeliest tokens. */
function topDiff(a: Float32Array, b: Float32Array): number {
  const top = [...a.keys()].sort((x, y) => a[y]! - a[x]!).slice(0, 5);
  return Math.max(...top.map((t) => Math.abs(a[t]! - b[t]!)));
}

describe('the memory64 build', () => {
  it('computes as the wasm32 build does, to the logit', async () => {
    const conversation = next(question, 'A fire.', 'And what else?');
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
        const ours = await ask(cold, question, { max_tokens: 4 });
        console.log(`[memory64] 4 tokens in ${((performance.now() - t1) / 1000).toFixed(1)} s`);
        const native = await nativeAnswer(modelPath('llama-past-4gib'), {
          messages: question,
          temperature: 0,
          max_tokens: 4,
          ...COMPARABLE,
        });
        const diff = answerDiff(ours, native);
        worst['memory64 vs native (logprob)'] = Number(diff.logprobs.toFixed(4));
        expect(diff.tokens[0]).toEqual(diff.tokens[1]);
        expect(diff.logprobs).toBeLessThan(NATIVE_LOGPROB_TOLERANCE);
      },
      MINUTES,
    );

    it(
      'saves its state in IndexedDB and resumes after a reload as a cold engine reads the conversation',
      async () => {
        const db = newDb();
        const opts = { variant: 'mt64' as const, threads: THREADS, db, minTokens: 8, nCtx: 512 };
        const saver = await track(testEngine('llama-past-4gib', opts));
        const turn2 = next(question, reply(await ask(saver, question, { max_tokens: 4 })), 'And what else?');
        await saver.cache.flush();
        await saver.unload();
        const reloaded = await track(testEngine('llama-past-4gib', opts));
        const restored = await inspect(reloaded).promptLogits({ messages: turn2 });
        expect(restored.source).toBe('indexeddb');
        expect(restored.cached).toBeGreaterThan(0);
        await reloaded.unload();
        const fresh = await inspect(cold).promptLogits({ messages: turn2 });
        const d = topDiff(fresh.logits, restored.logits);
        worst['restored vs cold (logits)'] = Number(d.toFixed(5));
        expect(d).toBeLessThan(LOGPROB_TOLERANCE);
      },
      MINUTES,
    );
  });
});
