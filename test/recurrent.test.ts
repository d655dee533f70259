// Models whose memory cannot be rolled back to an earlier token (recurrent: Mamba; hybrid: Qwen3.5, LFM2; sliding-
// window attention with a window-sized cache: Gemma 3 with swaFull false): the cache reuses them only where a state
// is exact (the whole cached sequence, or a checkpoint), and every cached answer and next-token distribution equals
// a cold engine's. A full-size sliding-window cache (the default) rolls back like plain attention.
import 'fake-indexeddb/auto';
import { beforeAll, describe, expect, it } from 'vitest';
import { commonPrefix } from '../src/backends/llamacpp/cache/prefix.ts';
import type { NodeEngine } from '../src/node.ts';
import type { ChatMessage, LoadOptions } from '../src/types.ts';
import { type ModelName, SWA_WINDOW } from './fixtures/models.ts';
import {
  inspect,
  ask,
  cachedEngine,
  coldEngine,
  expectPromptMatters,
  expectSameAnswer,
  maxDiff,
  newDb,
  next,
  reply,
  scale,
  SYSTEM,
  systemPrefixLength,
  testEngine,
  trackEngines,
} from './helpers.ts';

const track = trackEngines();

// '-hello' models answer "Hello, world!", which tokenizes back to the same tokens: the next turn's prompt extends
// the cached sequence (random text often tokenizes differently when rendered back).
// The '-tiny' twin (random text, no end) fills a context.
describe.each([
  ['mamba-hello', 'mamba-tiny', 'recurrent', {}],
  ['qwen35-hello', 'qwen35-tiny', 'hybrid', {}],
  ['gemma3-hello', 'gemma3-tiny', 'swa', { swaFull: false }],
] as [ModelName, ModelName, string, LoadOptions][])('%s (%s, %s memory) %o', (model, talker, kind, load) => {
  let warm: NodeEngine;
  let cold: NodeEngine;
  beforeAll(async () => {
    // The cold engine keeps a full-size cache (the default): window-sized answers must equal full-size ones.
    [warm, cold] = await Promise.all([track(cachedEngine(model, load)), track(coldEngine(model))]);
  });

  /** The warm engine's next-token logits for `messages` equal the cold one's (within llama.cpp's batch-split noise). */
  async function expectSameLogits(messages: ChatMessage[], extra: { conversation_id?: string } = {}) {
    const cached = await inspect(warm).promptLogits({ messages, ...extra });
    const fresh = await inspect(cold).promptLogits({ messages });
    expect(maxDiff(cached.logits, fresh.logits)).toBeLessThan(1e-3 * scale(fresh.logits));
    return cached;
  }

  it('answers another question with other log-probabilities (else the comparisons below could not fail)', async () => {
    await expectPromptMatters(cold);
  });

  it('reports its memory kind', async () => {
    expect((await warm.info()).model!.memory.kind).toBe(kind);
  });

  it('continues a conversation from the whole cached state, answering as a cold engine', async () => {
    let messages: ChatMessage[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Name a bread.' },
    ];
    let previous = 0;
    for (const q of ['And a river?', 'Which star is brightest?']) {
      const [w, c] = [await ask(warm, messages, { conversation_id: 'follow' }), await ask(cold, messages)];
      expectSameAnswer(w, c);
      expect(reply(w)).toBe('Hello, world!');
      if (previous) expect(w.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(previous);
      previous = w.usage.prompt_tokens;
      messages = next(messages, reply(w), q);
    }
    const cached = await expectSameLogits(messages, { conversation_id: 'follow' });
    expect(cached.cached).toBeGreaterThan(previous);
  });

  it("regenerates an answer from the checkpoint before the prompt's last token", async () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Tell me a story.' },
    ];
    const first = await ask(warm, messages, { conversation_id: 'regen' });
    const again = await ask(warm, messages, { conversation_id: 'regen' });
    expectSameAnswer(again, first);
    expectSameAnswer(again, await ask(cold, messages));
    expect(again.usage.prompt_tokens_details.cached_tokens).toBe(first.usage.prompt_tokens - 1);
  });

  it("goes back to the system prompt's checkpoint when an earlier message is edited", async () => {
    const base: ChatMessage[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Name a bread.' },
    ];
    const first = await ask(warm, base, { conversation_id: 'edit' });
    const edited = next(
      [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'Name a cake instead.' },
      ],
      reply(first),
      'And a river?',
    );
    const [w, c] = [await ask(warm, edited, { conversation_id: 'edit' }), await ask(cold, edited)];
    expectSameAnswer(w, c);
    expect(w.usage.prompt_tokens_details.cached_tokens).toBe(systemPrefixLength(warm, edited));
  });

  // A chat of four exchanges sent whole (a conversation opened again), then with a fifth inserted before its last
  // question: what the app's edit of an earlier message sends. The first request kept states at its message ends.
  const exchange = (q: string): ChatMessage[] => [
    { role: 'user', content: q },
    { role: 'assistant', content: 'Hello, world!' },
  ];
  const history: ChatMessage[] = [
    { role: 'system', content: SYSTEM },
    ...exchange('Name a bread.'),
    ...exchange('And a river?'),
    ...exchange('Which star is brightest?'),
  ];
  const last: ChatMessage = { role: 'user', content: 'And a lake?' };
  const whole = [...history, last];
  const edited = [...history, ...exchange('A mountain, too?'), last];
  /** Where the edited prompt can resume: the end of the third exchange, the last of the first prompt's message ends
   * the edited one shares. */
  const insertedAt = (engine: NodeEngine) => {
    const first = inspect(engine).prompt({ messages: whole });
    const shared = commonPrefix(first.tokens, inspect(engine).prompt({ messages: edited }).tokens);
    const end = Math.max(...first.messageEnds.filter((e) => e <= shared));
    expect(end).toBeGreaterThan(systemPrefixLength(engine, edited)); // not the system prompt's end, as before
    expect(end).toBeGreaterThan(0.7 * shared);
    return end;
  };

  it('an exchange inserted before the last question resumes from the end of the one before it, answering as a cold engine', async () => {
    await ask(warm, whole, { conversation_id: 'insert' });
    const [w, c] = [await ask(warm, edited, { conversation_id: 'insert' }), await ask(cold, edited)];
    expectSameAnswer(w, c);
    expect(w.usage.prompt_tokens_details.cached_tokens).toBe(insertedAt(warm));
  });

  it('after a reload too: the record in IndexedDB keeps the states at its message ends', async () => {
    const db = newDb();
    const before = await track(cachedEngine(model, { db, systemPrompt: false, ...load }));
    await ask(before, whole, { conversation_id: 'insert-saved' });
    await before.cache.flush();
    const reloaded = await track(cachedEngine(model, { db, systemPrompt: false, ...load }));
    const r = await ask(reloaded, edited, { conversation_id: 'insert-saved' });
    expect(r.timings.cache_source).toBe('indexeddb');
    expect(r.usage.prompt_tokens_details.cached_tokens).toBe(insertedAt(reloaded));
    expectSameAnswer(r, await ask(cold, edited));
    console.log(
      `[insert] ${model}: ${r.usage.prompt_tokens_details.cached_tokens} of ${r.usage.prompt_tokens} from IndexedDB`,
    );
  });

  it('shares a system prompt between two conversations', async () => {
    const a = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'First conversation.' },
    ] as ChatMessage[];
    const b = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'A second, unrelated one.' },
    ] as ChatMessage[];
    await ask(warm, a);
    const rb = await ask(warm, b);
    expect(rb.usage.prompt_tokens_details.cached_tokens).toBe(systemPrefixLength(warm, b));
    expectSameAnswer(rb, await ask(cold, b));
  });

  it('answers four concurrent requests as it answers each alone', async () => {
    const prompts = ['One.', 'Two, longer than one.', 'Three is here.', 'Four.'].map(
      (q) =>
        [
          { role: 'system', content: SYSTEM },
          { role: 'user', content: q },
        ] as ChatMessage[],
    );
    const together = await Promise.all(prompts.map((m) => ask(warm, m, { max_tokens: 12 })));
    for (const [i, m] of prompts.entries()) expectSameAnswer(together[i]!, await ask(cold, m, { max_tokens: 12 }));
  });

  it('carries a conversation over when the context grows, answering as a cold engine', async () => {
    const growing = await track(testEngine(model, { minTokens: 32, ...load })); // the context sized from demand
    let messages: ChatMessage[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Name a bread.' },
    ];
    const r1 = await ask(growing, messages, { conversation_id: 'grow' });
    const before = (await growing.info()).nCtx;
    messages = next(messages, reply(r1), `Read this: ${'bread rivers stars maps tea '.repeat(200)}`);
    const r2 = await ask(growing, messages, { conversation_id: 'grow', max_tokens: 1100 });
    expect((await growing.info()).nCtx).toBeGreaterThan(before);
    expect(r2.usage.prompt_tokens_details.cached_tokens).toBe(r1.usage.total_tokens);
    expectSameAnswer(r2, await ask(cold, messages, { max_tokens: 1100 }));
  });

  it('resumes from IndexedDB after a reload (each turn saves its new cells and the recurrent state after them)', async () => {
    const db = newDb();
    const first = await track(cachedEngine(model, { db, ...load }));
    const turn1: ChatMessage[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Name a bread.' },
    ];
    const r1 = await ask(first, turn1, { conversation_id: 'saved' });
    await first.cache.flush();
    const turn2 = next(turn1, reply(r1), 'And a river?');
    const reloaded = await track(cachedEngine(model, { db, ...load }));
    const r2 = await ask(reloaded, turn2, { conversation_id: 'saved' });
    expect(r2.timings.cache_source).toBe('indexeddb');
    expect(r2.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(r1.usage.prompt_tokens);
    expectSameAnswer(r2, await ask(cold, turn2));
  });

  it('after a reload, goes back to the end of a saved turn when the next question is edited', async () => {
    const db = newDb();
    const first = await track(cachedEngine(model, { db, systemPrompt: false, ...load }));
    const turn1: ChatMessage[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Name a bread.' },
    ];
    const r1 = await ask(first, turn1, { conversation_id: 'branch' });
    const turn2 = next(turn1, reply(r1), 'And a river?');
    const r2 = await ask(first, turn2, { conversation_id: 'branch' });
    await first.cache.flush();
    const edited = next(turn1, reply(r1), 'And a lake?');
    const reloaded = await track(cachedEngine(model, { db, systemPrompt: false, ...load }));
    const r = await ask(reloaded, edited, { conversation_id: 'branch' });
    expect(r.timings.cache_source).toBe('indexeddb');
    // The end of turn 1's reply as turn 2's prompt renders it (the state kept there), past the first saved chunk's
    // end (turn 1's prompt and reply).
    const p2 = inspect(first).prompt({ messages: turn2 });
    const shared = commonPrefix(p2.tokens, inspect(first).prompt({ messages: edited }).tokens);
    expect(r.usage.prompt_tokens_details.cached_tokens).toBe(Math.max(...p2.messageEnds.filter((e) => e <= shared)));
    expect(r.usage.prompt_tokens_details.cached_tokens).toBeGreaterThanOrEqual(r1.usage.total_tokens);
    expect(r.usage.prompt_tokens_details.cached_tokens).toBeLessThan(r2.usage.prompt_tokens);
    expectSameAnswer(r, await ask(cold, edited));
  });

  it('falls back from context shift to stopping: a recurrent state cannot drop tokens', async () => {
    const small = await track(cachedEngine(talker, { nCtx: 300, ...load }));
    const max = 1000;
    const r = await small.chat.completions.create({
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'Go on.' },
      ],
      temperature: 0,
      max_tokens: max,
      context_overflow: 'shift',
    });
    const { nCtx } = await small.info();
    expect(r.choices[0]!.finish_reason).toBe('length');
    // It stopped when the context was full (the last sampled token is counted, never decoded).
    expect(r.usage.prompt_tokens + r.usage.completion_tokens).toBe(nCtx + 1);
    expect(r.warnings).toEqual([
      expect.stringMatching(/context_overflow 'shift' cannot drop tokens from a \w+ model's state/),
    ]);
  });
});

describe('gemma3-hello with a full-size sliding-window cache (the default)', () => {
  it('goes back to any earlier token, like plain attention, past the window', async () => {
    const [warm, cold] = await Promise.all([track(cachedEngine('gemma3-hello')), track(coldEngine('gemma3-hello'))]);
    expect((await warm.info()).model!.memory).toEqual({ kind: 'swa', swaWindow: SWA_WINDOW });
    const list = 'bread, river, lake, hill, '.repeat(8);
    const base: ChatMessage[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: `Name ${list}and a star.` },
    ];
    const first = await ask(warm, base, { conversation_id: 'full' });
    // An edit near the end: everything before it is reused, more than a window past the system prompt.
    const edited = next(
      [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: `Name ${list}and a moon.` },
      ],
      reply(first),
      'Go on.',
    );
    const [w, c] = [await ask(warm, edited, { conversation_id: 'full' }), await ask(cold, edited)];
    expectSameAnswer(w, c);
    expect(w.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(systemPrefixLength(warm, edited) + SWA_WINDOW);
  });
});
