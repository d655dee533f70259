// Backend choice in Chromium ('chromium-wllama' project) on a real WebGPU adapter: SwiftShader, Chromium's Vulkan on
// the CPU (playwright.config.ts turns it on), a fallback adapter without shader-f16: 'wllama' runs wllama after proving
// itself against the CPU engine. ('auto' there times Hearth's GPU engine against its CPU engine and runs the CPU one:
// gpu-engine.spec.ts, chromium-webgpu.)
import { expect, openEngine, test } from './fixtures.ts';

test('backend "wllama" on SwiftShader proves itself against the wasm engine on the probe model, then answers; info() says why', async ({
  harness,
}) => {
  await openEngine(harness, { backend: 'wllama' });
  const out = await harness.evaluate(async () => {
    const before = await window.engine.info();
    await window.engine.load('/test-models/qwen2-hello.gguf', { nCtx: 1024 });
    const reply = await window.engine.chat.completions.create({
      messages: [{ role: 'user', content: 'Hi' }],
      temperature: 0,
    });
    return {
      before,
      after: await window.engine.info(),
      answer: reply.choices[0]!.message.content,
      timings: reply.timings,
    };
  });
  // The adapter is real: the self-test ran wllama on it, and its values agreed with the wasm engine's.
  expect(out.before.selection).toMatchObject({
    requested: 'wllama',
    adapter: { shaderF16: false },
    selfTest: { passed: true, sameTopTokens: true },
  });
  expect(out.before.selection.selfTest!.maxLogprobDiff).toBeLessThan(0.1);
  expect(out.before.selection.reason).toMatch(/^wllama passed its self-test \(log-probabilities within [\d.]+\)$/);
  expect(out.after).toMatchObject({ backend: 'wllama', model: { name: 'hearth-test-qwen2-qwen2' }, storage: 'opfs' });
  expect(out.after.capabilities).toMatchObject({
    persistentKv: false,
    batching: false,
    embeddings: false,
    contextShift: false,
  });
  expect(out.answer).toBe('Hello, world!');
  expect(out.timings.predicted_n).toBeGreaterThan(0);
});

test('backend "wllama" refuses, before running anything, the load options and requests wllama cannot honour', async ({
  harness,
}) => {
  await openEngine(harness, { backend: 'wllama' });
  const out = await harness.evaluate(async () => {
    const refusal = (e: { name: string; code: string; details?: { param?: string }; message: string }) => ({
      name: e.name,
      code: e.code,
      param: e.details?.param,
      message: e.message,
    });
    const e = window.engine;
    const options = await Promise.all(
      [{ nParallel: 2 }, { kvBudgetBytes: 1 << 28 }, { swaFull: false }].map((o) =>
        e.load('/test-models/qwen2-hello.gguf', o).then(() => null, refusal),
      ),
    );
    const unloaded = (await e.info()).model;
    await e.load('/test-models/qwen2-hello.gguf', { nCtx: 1024 });
    const shift = await e.chat.completions
      .create({ messages: [{ role: 'user', content: 'Hi' }], context_overflow: 'shift' })
      .then(() => null, refusal);
    const embed = await e.embeddings.create({ input: 'bread' }).then(() => null, refusal);
    const still = await e.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], temperature: 0 });
    return { options, unloaded, shift, embed, still: still.choices[0]!.message.content };
  });
  expect(out.options.map((r) => r && [r.name, r.code, r.param])).toEqual([
    ['InvalidRequestError', 'unsupported_by_backend', 'nParallel'],
    ['InvalidRequestError', 'unsupported_by_backend', 'kvBudgetBytes'],
    ['InvalidRequestError', 'unsupported_by_backend', 'swaFull'],
  ]);
  expect(out.options[0]!.message).toMatch(
    /'wllama' backend does not support the load option nParallel = 2: leave it out, or use backend 'wasm'/,
  );
  expect(out.unloaded).toBeNull();
  expect(out.shift).toMatchObject({
    name: 'InvalidRequestError',
    code: 'unsupported_by_backend',
    param: 'context_overflow',
  });
  expect(out.embed).toMatchObject({ name: 'InvalidRequestError', code: 'unsupported_by_backend' });
  expect(out.still).toBe('Hello, world!');
});
