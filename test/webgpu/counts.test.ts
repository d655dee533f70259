// What a decode token costs the host on the GPU engine, counted in calls into WebGPU (test/webgpu/gpu-trace.ts), so
// that a change cannot quietly bring the per-token work back: after warm-up, a token's graph is replayed from its
// record (no bind group created, no kernel encoded by ggml), goes to the GPU in one submit with its logits' copy, and no
// pass sets the pipeline or bind group it has set already. Its own file: the trace wraps WebGPU's classes for the
// process.
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/types.ts';
import { ask, NO_CACHE, SYSTEM, testEngine, trackEngines } from '../helpers.ts';
import { takeTrace, traceCounts, traceDiff, traceWebGpu } from './gpu-trace.ts';

const track = trackEngines();
const messages: ChatMessage[] = [
  { role: 'system', content: SYSTEM },
  { role: 'user', content: 'Name a bread.' },
];

describe('host work of a decode token on the GPU engine', () => {
  it('after warm-up: its graph replayed, one submit, no bind group created, no set call repeated', async () => {
    traceWebGpu();
    const engine = await track(testEngine('spm-notemplate', { variant: 'webgpu', ...NO_CACHE, nCtx: 1024 }));
    // Warm-up: pipelines compiled, graphs recorded at this prompt's length and at one token.
    await ask(engine, messages, { max_tokens: 4 });
    takeTrace();
    await ask(engine, messages, { max_tokens: 1 });
    const prompt = takeTrace();
    const answer = await ask(engine, messages, { max_tokens: 16 });
    const tokens = answer.usage.completion_tokens - 1;
    expect(tokens).toBeGreaterThanOrEqual(8);
    const decode = traceCounts(traceDiff(takeTrace(), prompt), tokens, 0);
    console.log(`a decode token: ${JSON.stringify(decode)}`);
    expect(decode).toMatchObject({
      replays: 1,
      bindGroupsCreated: 0,
      submits: 1,
      repeatedSets: 0,
      passes: 1,
      encoders: 2, // the graph's and the logits' copy
      mapAsync: 1,
      suspensions: 1,
    });
    expect(decode.dispatches).toBeGreaterThan(20);
    expect(decode.setBindGroup).toBeLessThanOrEqual(decode.dispatches);
  });
});
