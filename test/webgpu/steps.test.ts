// A long prompt on a software adapter (Node: Dawn over lavapipe, which the browser calls a fallback adapter) goes to
// the GPU in steps of about a second's work, not in one submit of N_BATCH tokens: a stop or another conversation's
// next token waits at most one step, and the split depends on the model's size alone, so the same prompt is split the
// same way every time. The answer is the CPU engine's.
import { describe, expect, it } from 'vitest';
import { gpuStepTokens, N_BATCH } from '../../src/backends/llamacpp/binding/batch.ts';
import type { ChatMessage } from '../../src/types.ts';
import { answerDiff, GPU_LOGPROB_TOLERANCE } from '../compare.ts';
import { ask, expectSameAnswer, inspect, NO_CACHE, SYSTEM, testEngine, trackEngines } from '../helpers.ts';

const track = trackEngines();
const long: ChatMessage[] = [
  { role: 'system', content: SYSTEM },
  { role: 'user', content: 'Name a bread.' },
];

describe('prompt steps on a software adapter', () => {
  it('a long prompt is decoded in steps sized to the model (the same ones every time), and answers as the CPU engine does', async () => {
    const gpu = await track(testEngine('qwen2-hello', { variant: 'webgpu', ...NO_CACHE }));
    const info = await gpu.info();
    const step = gpuStepTokens(true, info.model!.nParams);
    expect(step).toBeLessThan(N_BATCH);
    const prompt = inspect(gpu).prompt({ messages: long }).tokens.length;
    expect(prompt).toBeGreaterThan(2 * step);

    const profile = inspect(gpu).profile;
    const before = { ...profile };
    const answer = await ask(gpu, long, { max_tokens: 4 });
    // The prompt in ceil(prompt / step) steps (one more where the system prompt's end cuts a step), then 3 tokens.
    expect(profile.mostTokens).toBeLessThanOrEqual(step);
    expect(profile.steps - before.steps).toBeGreaterThanOrEqual(Math.ceil(prompt / step) + 3);

    const cpu = await track(testEngine('qwen2-hello', NO_CACHE));
    expectSameAnswer(answer, await ask(cpu, long, { max_tokens: 4 }), GPU_LOGPROB_TOLERANCE);
    // Split the same way, the same request gives the same bytes again.
    expect(answerDiff(answer, await ask(gpu, long, { max_tokens: 4 })).logprobs).toBe(0);
  });

  it('a hardware adapter and the CPU engine take N_BATCH tokens a step', () => {
    expect(gpuStepTokens(false, 8e9)).toBe(N_BATCH);
    // The 0.5B benchmark model on a software adapter: 16 tokens, the least a step takes.
    expect(gpuStepTokens(true, 494e6)).toBe(16);
  });
});
