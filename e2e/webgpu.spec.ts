// Backend choice in Chromium ('chromium-webgpu' project). This machine's headless Chromium offers no WebGPU adapter
// (with --enable-unsafe-webgpu it would be SwiftShader, without shader-f16), so 'webgpu' runs @wllama/wllama's CPU
// build after its self-test, and 'auto' stays on wasm. The test that needs a real GPU skips elsewhere.
import { expect, openEngine, test } from './fixtures.ts';

test('backend "webgpu" proves itself against the wasm engine on the probe model, then answers; info() says why', async ({ harness }) => {
  await openEngine(harness, { backend: 'webgpu' });
  const out = await harness.evaluate(async () => {
    const before = await window.engine.info();
    await window.engine.load('/test-models/qwen2-hello.gguf', { nCtx: 1024 });
    const reply = await window.engine.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], temperature: 0 });
    return { before, after: await window.engine.info(), answer: reply.choices[0]!.message.content, timings: reply.timings };
  });
  expect(out.before.selection).toMatchObject({ requested: 'webgpu', selfTest: { passed: true, sameTopTokens: true } });
  expect(out.before.selection.selfTest!.maxLogprobDiff).toBeLessThan(0.1);
  expect(out.before.selection.reason).toMatch(/passed its self-test/);
  expect(out.after).toMatchObject({ backend: 'webgpu', model: { name: 'hearth-test-qwen2-qwen2' } });
  expect(out.after.capabilities).toMatchObject({ persistentKv: false, batching: false, embeddings: false, contextShift: false });
  expect(out.answer).toBe('Hello, world!');
  expect(out.timings.predicted_n).toBeGreaterThan(0);
});

test('backend "auto" without an adapter that has shader-f16 runs on wasm, with every feature, and says why', async ({ harness }) => {
  await openEngine(harness, { backend: 'auto' });
  const info = await harness.evaluate(async () => {
    const gpu = (navigator as unknown as { gpu?: { requestAdapter(): Promise<{ features: Set<string> } | null> } }).gpu;
    const adapter = await gpu?.requestAdapter();
    return { hasF16: adapter?.features.has('shader-f16') ?? false, info: await window.engine.info() };
  });
  test.skip(info.hasF16, 'this browser has an adapter with shader-f16');
  expect(info.info.backend).toBe('wasm');
  expect(info.info.selection).toMatchObject({ requested: 'auto', selfTest: null });
  expect(info.info.selection.reason).toMatch(/no WebGPU adapter|lacks shader-f16/);
  expect(info.info.capabilities).toMatchObject({ persistentKv: true, batching: true, embeddings: true });
});

test('on a GPU with shader-f16, "auto" picks WebGPU once its self-test passes (needs a real GPU)', async ({ harness }) => {
  await openEngine(harness, { backend: 'auto' });
  const info = await harness.evaluate(async () => {
    const gpu = (navigator as unknown as { gpu?: { requestAdapter(): Promise<{ features: Set<string> } | null> } }).gpu;
    const adapter = await gpu?.requestAdapter();
    return { hasF16: adapter?.features.has('shader-f16') ?? false, info: await window.engine.info() };
  });
  test.skip(!info.hasF16, 'needs a GPU whose WebGPU adapter has shader-f16');
  const { selection } = info.info;
  // A GPU that computes wrong values (Linux Chrome on ANGLE) must fall back to wasm, saying so.
  if (selection.selfTest?.passed) expect(info.info.backend).toBe('webgpu');
  else expect(selection.reason).toMatch(/computed different values|failed its self-test/);
  expect(selection.adapter?.shaderF16).toBe(true);
});
