// A token's graph issued again from its record (wasm/patches/0035: pipelines, bind groups and workgroup counts kept,
// one call from the wasm) computes exactly what encoding it afresh computes, on every fixture architecture. The
// requests change the graph's shape under the replay: a short prompt (the KV cache's first 256 cells), a long one (512
// cells: every view of the cache changes size), the short one again (a record from before, its parameters written
// back) — a replay that missed one of those changes would reuse a stale parameter and answer differently.
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/types.ts';
import { answerDiff, GPU_ARCHITECTURES } from '../compare.ts';
import { ask, inspect, NO_CACHE, SYSTEM, testEngine, trackEngines } from '../helpers.ts';
import { takeTrace, traceWebGpu } from './gpu-trace.ts';

const track = trackEngines();
const short: ChatMessage[] = [{ role: 'user', content: 'Name a bread.' }];
const long: ChatMessage[] = [
  { role: 'system', content: SYSTEM },
  { role: 'user', content: 'And a river?' },
];

describe('graph replay on the GPU engine', () => {
  it.each(GPU_ARCHITECTURES)('%s: a replayed graph gives the same bytes as one encoded afresh', async (model) => {
    traceWebGpu();
    takeTrace();
    const replayed = await track(testEngine(model, { variant: 'webgpu', ...NO_CACHE, nCtx: 1024 }));
    const fresh = await track(testEngine(model, { variant: 'webgpu', gpuReplay: false, ...NO_CACHE, nCtx: 1024 }));
    for (const messages of [short, long, short]) {
      const [a, b] = [
        await ask(replayed, messages, { max_tokens: 12 }),
        await ask(fresh, messages, { max_tokens: 12 }),
      ];
      const diff = answerDiff(a, b);
      expect(diff.tokens[0]).toEqual(diff.tokens[1]);
      expect(diff.logprobs).toBe(0);
      // The whole vocabulary after the prompt, not only the top tokens.
      const [la, lb] = [
        await inspect(replayed).promptLogits({ messages }),
        await inspect(fresh).promptLogits({ messages }),
      ];
      const bytes = (f: Float32Array) => Buffer.from(f.buffer, f.byteOffset, f.byteLength);
      expect(bytes(la.logits).equals(bytes(lb.logits))).toBe(true);
    }
    // The replaying engine did replay (the other never does): most of its graphs came from records.
    expect(takeTrace().replays).toBeGreaterThan(10);
  });
});
