// The KV cache in memory: multi-turn conversations prefill only what is new, the system prompt is decoded once,
// and whatever the cache supplies gives the same answer as decoding everything.
import { beforeAll, describe, expect, it } from 'vitest';
import { PromptCache } from '../src/backends/llamacpp/cache/prompt-cache.ts';
import { LlamaContext } from '../src/backends/llamacpp/binding/context.ts';
import { LlamaModel } from '../src/backends/llamacpp/binding/model.ts';
import { AbortError } from '../src/errors.ts';
import type { NodeEngine } from '../src/node.ts';
import type { ChatMessage } from '../src/types.ts';
import type { ModelName } from './fixtures/models.ts';
import {
  inspect,
  ask,
  cachedEngine,
  coldEngine,
  expectPromptMatters,
  expectSameAnswer,
  maxDiff,
  openLlama,
  promptTokens,
  reply,
  scale,
  splitLogits,
  SYSTEM,
  systemPrefixLength,
  trackEngines,
} from './helpers.ts';

const QUESTIONS = ['Name a bread.', 'And a river?', 'Which star is brightest?', 'Draw me a map.'];

const track = trackEngines();

describe.each([
  ['qwen2-hello', 'ChatML (Qwen2.5)'],
  ['llama3-hello', 'Llama 3.2'],
] as [ModelName, string][])('conversation cache in memory, %s (%s template)', (model) => {
  let warm: NodeEngine;
  let cold: NodeEngine;
  beforeAll(async () => {
    [warm, cold] = await Promise.all([track(cachedEngine(model)), track(coldEngine(model))]);
  });

  it('answers another question with other log-probabilities (else the comparisons below could not fail)', async () => {
    await expectPromptMatters(cold);
  });

  it('prefills only the new message each turn and answers exactly as an engine without cache', async () => {
    const messages: ChatMessage[] = [{ role: 'system', content: SYSTEM }];
    let previousPrompt = 0;
    for (const [turn, q] of QUESTIONS.entries()) {
      messages.push({ role: 'user', content: q });
      const [w, c] = [await ask(warm, messages), await ask(cold, messages)];
      expectSameAnswer(w, c);
      expect(reply(w)).toBe('Hello, world!');
      expect(w.usage.prompt_tokens).toBe(c.usage.prompt_tokens);
      expect(c.usage.prompt_tokens_details.cached_tokens).toBe(0);
      if (turn === 0) {
        expect(w.timings.cache_source).toBe('none');
      } else {
        // Everything the previous turn read and wrote is reused; only the new user message and headers are decoded.
        expect(w.timings.cache_source).toBe('memory');
        expect(w.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(previousPrompt);
        expect(w.timings.prompt_n).toBe(w.usage.prompt_tokens - w.usage.prompt_tokens_details.cached_tokens);
        expect(w.timings.prompt_n).toBeLessThan(30);
      }
      expect(w.timings.cache_n).toBe(w.usage.prompt_tokens_details.cached_tokens);
      previousPrompt = w.usage.prompt_tokens;
      messages.push({ role: 'assistant', content: reply(w) });
    }
  });

  it('rebuilds from the divergence point when an earlier message is edited', async () => {
    const base: ChatMessage[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: QUESTIONS[0]! },
    ];
    const first = await ask(warm, base);
    const edited: ChatMessage[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Name a cake instead.' },
      { role: 'assistant', content: reply(first) },
      { role: 'user', content: QUESTIONS[1]! },
    ];
    const [w, c] = [await ask(warm, edited), await ask(cold, edited)];
    expectSameAnswer(w, c);
    // The system prompt is still reused; the edited question and everything after it are decoded again.
    expect(w.usage.prompt_tokens_details.cached_tokens).toBeGreaterThanOrEqual(systemPrefixLength(warm, edited));
    expect(w.usage.prompt_tokens_details.cached_tokens).toBeLessThan(first.usage.prompt_tokens);
  });

  it('decodes a shared system prompt once for different conversations', async () => {
    const a = await ask(warm, [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'First conversation.' },
    ]);
    const b = await ask(warm, [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'A second, unrelated one.' },
    ]);
    expect(reply(a)).toBe('Hello, world!');
    expect(reply(b)).toBe('Hello, world!');
    expect(b.timings.cache_source).toBe('memory');
    expect(b.usage.prompt_tokens_details.cached_tokens).toBeGreaterThanOrEqual(
      systemPrefixLength(warm, [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'A second, unrelated one.' },
      ]),
    );
    // The first conversation kept its own state: its next turn is still cached in full.
    const a2 = await ask(warm, [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'First conversation.' },
      { role: 'assistant', content: reply(a) },
      { role: 'user', content: 'More.' },
    ]);
    expect(a2.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(a.usage.prompt_tokens);
  });
});

describe('cached and cold prompts give the same next-token logits (within batch-split noise)', () => {
  it.each(['qwen2-tiny', 'llama3-tiny', 'qwen2-hello-q8'] as ModelName[])('%s, over three turns', async (model) => {
    const warm = await track(cachedEngine(model));
    const cold = await track(coldEngine(model));
    const messages: ChatMessage[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: QUESTIONS[0]! },
    ];
    const first = await ask(warm, messages, { max_tokens: 6 });
    messages.push({ role: 'assistant', content: reply(first) }, { role: 'user', content: QUESTIONS[1]! });

    const cached = await inspect(warm).promptLogits({ messages });
    const fresh = await inspect(cold).promptLogits({ messages });
    expect(fresh.cached).toBe(0);
    expect(cached.source).toBe('memory');
    expect(cached.cached).toBeGreaterThan(first.usage.prompt_tokens);

    // The warm slot was built in batches: the system prompt (cut there to cache it), the rest of the first prompt,
    // each generated token alone, then the rest.
    // Rebuilding that from scratch must give the warm logits bit for bit (the cache holds exactly those tokens at
    // those positions); the difference to one batch is llama.cpp's own batch-split noise, the bound for cold.
    const tokens = promptTokens(warm, messages);
    const p1 = first.usage.prompt_tokens;
    const system = systemPrefixLength(warm, messages);
    expect(system).toBeGreaterThan(200);
    const cuts = [system, p1, ...Array.from({ length: cached.cached - p1 }, (_, k) => p1 + k + 1)];
    const info = await warm.info();
    const mirrored = await splitLogits(model, info, tokens, cuts);
    const oneBatch = await splitLogits(model, info, tokens, []);
    expect(maxDiff(cached.logits, mirrored)).toBe(0);
    expect(maxDiff(fresh.logits, oneBatch)).toBe(0);
    const noise = maxDiff(mirrored, oneBatch);
    console.log(
      `[noise] ${model}: batch-split ${noise.toExponential(2)}, cached vs cold ${maxDiff(cached.logits, fresh.logits).toExponential(2)}, scale ${scale(fresh.logits).toFixed(2)}`,
    );
    // Small: llama.cpp's results depend on how a prompt is split into batches, by about 1e-5 of the logit scale on
    // these f32 models (more on quantized ones).
    expect(noise).toBeLessThan(0.01 * scale(fresh.logits));
    expect(maxDiff(cached.logits, fresh.logits)).toBeLessThanOrEqual(noise);
  });
});

describe('abort and failures', () => {
  it('keeps a conversation usable after an aborted reply', async () => {
    const warm = await track(cachedEngine('qwen2-tiny'));
    const cold = await track(coldEngine('qwen2-tiny'));
    const messages: ChatMessage[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: QUESTIONS[0]! },
    ];
    const controller = new AbortController();
    const stream = await warm.chat.completions.create({
      messages,
      temperature: 0,
      max_tokens: 50,
      stream: true,
      signal: controller.signal,
    });
    let pieces = 0;
    await expect(
      (async () => {
        for await (const c of stream) if (c.choices[0]?.delta.content && ++pieces === 3) controller.abort();
      })(),
    ).rejects.toBeInstanceOf(AbortError);
    // The aborted reply's tokens stay in the slot; the next request reuses the prompt and answers like a cold engine.
    const again = await ask(warm, messages, { max_tokens: 12 });
    expect(again.timings.cache_source).toBe('memory');
    expect(again.usage.prompt_tokens_details.cached_tokens).toBe(again.usage.prompt_tokens - 1);
    expectSameAnswer(again, await ask(cold, messages, { max_tokens: 12 }));
  });
});

describe('slots', () => {
  it('never hands a slot that a request is building on to a second request', async () => {
    const llama = await openLlama();
    const model = (await LlamaModel.load(llama, '/models/qwen2-tiny.gguf'))!;
    const ctx = await LlamaContext.create(model, {
      nCtx: 512,
      nBatch: 64,
      nUbatch: 64,
      nSeqMax: 5,
      threads: 1,
      typeK: 'f32',
      typeV: 'f32',
      flashAttn: 0,
    });
    const cache = new PromptCache(
      { ctx, canRollBack: true, windowedState: false, draftCells: null },
      { systemPrompt: false, conversations: true, minTokens: 32, chunkBytes: 64 * 2 ** 20 },
      null,
      'test',
      4,
    );
    const messages: ChatMessage[] = [{ role: 'user', content: 'Hi' }];
    const req = {
      messages,
      tools: undefined,
      conversationId: undefined,
      tokens: model.tokenize('Hi there, slots.', false, false),
      system: null,
    };
    const end = { reply: null, error: undefined, shiftedAt: null };
    const a = await cache.prepare(req);
    const b = await cache.prepare(req);
    expect(b.slot).not.toBe(a.slot);
    cache.release(a.slot, req, end);
    cache.release(b.slot, req, end);
    const c = await cache.prepare(req);
    cache.release(c.slot, req, end);
    expect([a.slot, b.slot]).toContain(c.slot);
    ctx.free();
    model.free();
  });
});

describe('KV cells are shared by the conversations in memory', () => {
  it('evicts the least recently used conversation when a new one needs the room, and all still answer correctly', async () => {
    // 1,024 cells hold three of these ~300-token conversations, not four.
    const engine = await track(cachedEngine('qwen2-hello', { nCtx: 1024 }));
    const convo = (i: number): ChatMessage[] => [
      { role: 'system', content: `Desk ${i}. ${SYSTEM}` },
      { role: 'user', content: `Question ${i}` },
    ];
    const firsts = [];
    for (let i = 0; i < 4; i++) firsts.push(await ask(engine, convo(i), { max_tokens: 8 }));
    expect(firsts.map(reply)).toEqual(new Array(4).fill('Hello, world!'));
    const stats = await engine.cache.stats();
    expect(stats.memory.tokens).toBeLessThanOrEqual(1024);
    expect(stats.memory.slots).toBe(3);
    // The most recent conversation is still in memory; the oldest was evicted and is decoded again.
    const latest = await ask(engine, [
      ...convo(3),
      { role: 'assistant', content: 'Hello, world!' },
      { role: 'user', content: 'More?' },
    ]);
    expect(latest.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(firsts[3]!.usage.prompt_tokens);
    const oldest = await ask(engine, [
      ...convo(0),
      { role: 'assistant', content: 'Hello, world!' },
      { role: 'user', content: 'More?' },
    ]);
    expect(oldest.usage.prompt_tokens_details.cached_tokens).toBeLessThan(firsts[0]!.usage.prompt_tokens);
    expect(reply(oldest)).toBe('Hello, world!');
  });
});
