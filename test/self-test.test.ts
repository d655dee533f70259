// The WebGPU self-test's judgement, with the real wasm engine as the reference. No GPU runs here: the candidate
// backend is simulated (a stand-in that answers the probe with the wasm engine's own log-probabilities, shifted or
// reordered the way a broken GPU would), which is the one boundary these tests cannot cross.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNodeEngine, type NodeEngine } from '../src/node.ts';
import { modelsDir } from './fixtures/models.ts';
import { probeModel, PROBE_PROMPT } from '../src/api/probe-model.ts';
import { selfTest, type TopLogprobs } from '../src/api/self-test.ts';

let engine: NodeEngine;
let reference: TopLogprobs;
// Node loads models from files: the probe as the page builds it, written out.
const probe = { path: join(modelsDir, 'hearth-probe.gguf') };

beforeAll(async () => {
  mkdirSync(modelsDir, { recursive: true });
  writeFileSync(probe.path, probeModel());
  engine = await createNodeEngine({ cache: { persistent: false } });
  await engine.load(probe, { nCtx: 256 });
  const res = await engine.chat.completions.create({
    messages: [{ role: 'user', content: PROBE_PROMPT }],
    max_tokens: 1,
    temperature: 0,
    logprobs: true,
    top_logprobs: 8,
  });
  reference = res.choices[0]!.logprobs!.content![0]!.top_logprobs.map(({ token, logprob }) => ({ token, logprob }));
  await engine.unload();
});

afterAll(() => engine?.unload());

/** A stand-in for wllama on a GPU that answers the probe with `answer(reference)`. */
function simulatedGpu(answer: (ref: TopLogprobs) => TopLogprobs) {
  const calls: string[] = [];
  const gpu = {
    load: async () => void calls.push('load'),
    promptLogprobs: async (prompt: string) => {
      calls.push(`probe:${prompt}`);
      return answer(reference);
    },
    unload: async () => void calls.push('unload'),
  };
  return { gpu: gpu as unknown as Parameters<typeof selfTest>[1], calls };
}

describe('the WebGPU self-test', () => {
  it('the probe model gives distinct whole-word likeliest tokens, so two backends can be matched by text', () => {
    expect(reference).toHaveLength(8);
    expect(new Set(reference.map((t) => t.token)).size).toBe(8);
    for (const t of reference) expect(t.token).toMatch(/^ ?[a-z]+$/);
    // Spread enough that f16 noise cannot reorder the first two.
    expect(reference[0]!.logprob - reference[1]!.logprob).toBeGreaterThan(0.01);
  });

  it('passes a backend that matches the wasm engine within f16 noise, and leaves the engine unloaded', async () => {
    const { gpu, calls } = simulatedGpu((ref) =>
      ref.map((t, i) => ({ ...t, logprob: t.logprob + (i % 2 ? 0.02 : -0.02) })),
    );
    const result = await selfTest(engine.engine, gpu, probe);
    expect(result).toMatchObject({ passed: true, sameTopTokens: true });
    expect(result.maxLogprobDiff).toBeCloseTo(0.02, 5);
    expect(calls).toEqual(['load', `probe:${PROBE_PROMPT}`, 'unload']);
    expect((await engine.info()).model).toBeNull();
  });

  it('fails a simulated GPU whose values are off by more than the tolerance', async () => {
    const { gpu } = simulatedGpu((ref) => ref.map((t) => ({ ...t, logprob: t.logprob - 0.3 })));
    expect(await selfTest(engine.engine, gpu, probe)).toMatchObject({
      passed: false,
      sameTopTokens: true,
      maxLogprobDiff: expect.closeTo(0.3, 5),
    });
  });

  it('fails a simulated GPU whose likeliest token differs, or that leaves a top token out', async () => {
    const swapped = simulatedGpu((ref) => [ref[1]!, ref[0]!, ...ref.slice(2)]);
    expect(await selfTest(engine.engine, swapped.gpu, probe)).toMatchObject({ passed: false, sameTopTokens: false });
    const missing = simulatedGpu((ref) => [ref[0]!, ...ref.slice(2)]);
    expect(await selfTest(engine.engine, missing.gpu, probe)).toMatchObject({
      passed: false,
      maxLogprobDiff: Infinity,
    });
    const empty = simulatedGpu(() => []);
    expect((await selfTest(engine.engine, empty.gpu, probe)).passed).toBe(false);
  });
});
