// A model past 4 GiB on the GPU engine (Node: Dawn over lavapipe), the model people buy a GPU for in miniature:
// llama-past-4gib is 4.32 GiB, its last layers at file offsets wasm32's size_t cannot hold (wasm/patches/0024). It
// loads with every layer on the adapter and the heap holding its embeddings; it answers as native llama.cpp does on
// the same file, and as Hearth's memory64 CPU build does; its state, saved in IndexedDB, resumes after a reload as a
// cold engine answers. Minutes on lavapipe (every token reads 4.3 GB), so outside `npm test`: `npm run test:large`
// (docs/testing.md).
import 'fake-indexeddb/auto';
import { statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeEngine } from '../../src/node.ts';
import { answerDiff, GPU_LOGPROB_TOLERANCE } from '../compare.ts';
import { ensureModel } from '../fixtures/models.ts';
import { ask, modelPath, NO_CACHE, reply, testEngine, trackEngines } from '../helpers.ts';
import { nativeOnModel, QUESTION, restoredVsCold } from './past-heap.ts';

const track = trackEngines();
const worst: Record<string, number> = {};
afterAll(() => console.log(`largest |Δ logprob|: ${JSON.stringify(worst)}`));

/** The same tokens, and top log-probabilities within the GPU's tolerance; `what` names the largest difference. */
function expectAlike(what: string, a: Parameters<typeof answerDiff>[0], b: Parameters<typeof answerDiff>[1]) {
  const diff = answerDiff(a, b);
  worst[what] = Number(diff.logprobs.toFixed(4));
  expect(diff.tokens[0]).toEqual(diff.tokens[1]);
  expect(diff.logprobs).toBeLessThan(GPU_LOGPROB_TOLERANCE);
}

beforeAll(async () => {
  await ensureModel('llama-past-4gib');
  expect(statSync(modelPath('llama-past-4gib')).size).toBeGreaterThan(4 * 2 ** 30);
});

// Each step takes minutes on lavapipe (a load ~35 s, a short prompt ~40 s).
const MINUTES = 15 * 60_000;

describe('a model past 4 GiB on the GPU engine', () => {
  /** Without a cache: the reference a restored conversation is compared with. */
  let cold: NodeEngine;

  it(
    'loads with every layer on the adapter, the heap holding its embeddings, and answers as native llama.cpp and the memory64 CPU engine',
    async () => {
      const size = statSync(modelPath('llama-past-4gib')).size;
      const t0 = performance.now();
      cold = await track(testEngine('llama-past-4gib', { variant: 'webgpu', ...NO_CACHE, nCtx: 512 }));
      const gpu = cold;
      const loadS = (performance.now() - t0) / 1000;
      const info = await gpu.info();
      expect(info.gpu?.layers).toBe(info.gpu?.totalLayers);
      const { peak, size: heap } = info.wasmHeap!;
      console.log(
        `[past-4gib] ${(size / 2 ** 30).toFixed(2)} GiB loaded in ${loadS.toFixed(1)} s; heap ` +
          `${(heap / 2 ** 20).toFixed(0)} MiB (${((100 * heap) / size).toFixed(1)}% of the file; malloc's peak ` +
          `${(peak / 2 ** 20).toFixed(0)} MiB)`,
      );
      // The embeddings (125 MiB), a 16 MiB staging chunk, compute buffers: far under the 4 GiB the file would need.
      expect(heap).toBeLessThan(0.15 * size);

      const t1 = performance.now();
      const onGpu = await ask(gpu, QUESTION, { max_tokens: 4 });
      console.log(`[past-4gib] 4 tokens on the GPU engine in ${((performance.now() - t1) / 1000).toFixed(1)} s`);
      expectAlike('GPU engine vs native', onGpu, await nativeOnModel());
      expect(reply(onGpu).length).toBeGreaterThan(0);
      // And as Hearth's own CPU engine does, on the build that holds the file (memory64.test.ts).
      const cpu = await track(testEngine('llama-past-4gib', { variant: 'mt64', threads: 2, ...NO_CACHE, nCtx: 512 }));
      expectAlike('GPU engine vs memory64 CPU engine', onGpu, await ask(cpu, QUESTION, { max_tokens: 4 }));
      await cpu.unload();
    },
    MINUTES,
  );

  it(
    'saves its state in IndexedDB and resumes after a reload as a cold engine reads the conversation',
    async () => {
      const d = await restoredVsCold({ variant: 'webgpu' }, cold, track);
      worst['restored vs cold (logits)'] = Number(d.toFixed(4));
      expect(d).toBeLessThan(GPU_LOGPROB_TOLERANCE);
    },
    MINUTES,
  );
});
