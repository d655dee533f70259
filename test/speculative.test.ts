// Speculative decoding, with n-gram guesses (speculative: { kind: 'ngram' }) and with a draft model (LoadOptions.draft,
// { kind: 'draft' }): the reply is the one the model writes without guesses — greedy token for token, sampled with the
// same seed the same tokens (each token is the model's own sample: llama.cpp's rule) — alone and batched, on every
// architecture whose memory can drop the guesses it does not take; usage and timings count the guesses. Memory that
// cannot (recurrent, hybrid, a window-sized sliding window) refuses it with a typed error. The draft follows the
// conversation cache: a next turn, and a conversation restored after a reload, answer as a cold engine.
import 'fake-indexeddb/auto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { NodeEngine } from '../src/node.ts';
import type { ChatCompletion, ChatMessage, SpeculativeOptions } from '../src/types.ts';
import type { ModelName } from './fixtures/models.ts';
import { ensureMultimodal } from './fixtures/projectors.ts';
import { testPng } from './fixtures/media.ts';
import {
  ask,
  cachedEngine,
  expectSameAnswer,
  inspect,
  modelPath,
  newDb,
  next,
  NO_CACHE,
  reply,
  testEngine,
  trackEngines,
} from './helpers.ts';

const track = trackEngines();
const NGRAM = { kind: 'ngram' as const, n_draft: 4 };
const DRAFT = { kind: 'draft' as const, n_draft: 4 };
/** Without guesses (an engine with a draft model guesses by default). */
const PLAIN = { speculative: null };
/** Earlier exchanges the reply repeats: the '-hello' models answer each turn alike, so the history holds the reply's
 * tokens after the same generation prompt, and the guesses are the reply. */
const history = (turns: number): ChatMessage[] => [
  { role: 'system', content: 'You greet.' },
  ...Array.from({ length: turns }, (_, i) => [
    { role: 'user' as const, content: `Greeting ${i + 1}?` },
    { role: 'assistant' as const, content: 'Hello, world!' },
  ]).flat(),
  { role: 'user', content: 'Once more?' },
];

const guesses = (r: ChatCompletion) => ({
  drafted: (r.timings as { draft_n?: number }).draft_n,
  kept: (r.timings as { draft_n_accepted?: number }).draft_n_accepted,
  usage: r.usage.completion_tokens_details,
});

describe.each([
  // [model, its draft, what the draft's guesses are]
  ['qwen2-hello', 'qwen2-hello-draft', {}],
  ['llama3-hello', 'llama3-hello-draft', {}],
  ['gemma3-hello', 'qwen2-hello-draft', {}], // a full-size sliding-window cache rolls back
  ['qwen2-tiny', 'qwen2-hello-draft', {}], // random text: the draft's guesses are refused
  ['qwen3-tiny', 'qwen3-tiny', {}], // query and key norms; its own draft
  ['qwen25vl-tiny', 'qwen25vl-tiny', {}], // M-RoPE positions; its own draft: every guess taken
  ['qwen3vl-tiny', 'qwen3vl-tiny', {}], // interleaved M-RoPE, deepstack
] as Array<[ModelName, ModelName, Partial<SpeculativeOptions>]>)('%s (draft %s)', (model, draft, draftOptions) => {
  let engine: NodeEngine;
  beforeAll(async () => {
    engine = await track(testEngine(model, { ...NO_CACHE, nCtx: 2048, draft: { path: modelPath(draft) } }));
  });

  describe.each([
    ['n-gram', NGRAM],
    ['draft', { ...DRAFT, ...draftOptions }],
  ] as Array<[string, SpeculativeOptions]>)('%s guesses', (_, spec) => {
    it('greedy: the same tokens and log-probabilities as without guesses; usage and timings count them', async () => {
      // An earlier answer the model is asked for again, with words put in its middle: n-gram guesses from it are
      // taken up to there, refused there, and taken again after.
      const ask1: ChatMessage[] = [
        { role: 'system', content: 'You greet.' },
        { role: 'user', content: 'Greeting?' },
      ];
      const text = (await ask(engine, ask1, { max_tokens: 24, ...PLAIN })).choices[0]!.message.content!;
      const mid = Math.floor(text.length / 2);
      const messages: ChatMessage[] = [
        ...ask1,
        { role: 'assistant', content: `${text.slice(0, mid)} there${text.slice(mid)}` },
        { role: 'user', content: 'Greeting?' },
      ];
      const plain = await ask(engine, messages, { max_tokens: 24, ...PLAIN });
      const guessed = await ask(engine, messages, { max_tokens: 24, speculative: spec });
      expectSameAnswer(guessed, plain);
      const g = guesses(guessed);
      if (spec.kind === 'draft' || model.endsWith('-hello')) expect(g.drafted).toBeGreaterThan(0);
      expect(g.drafted).toBeGreaterThanOrEqual(g.kept!);
      expect(g.usage).toEqual({ accepted_prediction_tokens: g.kept, rejected_prediction_tokens: g.drafted! - g.kept! });
      expect(guesses(plain).drafted).toBeUndefined();
      expect(plain.usage.completion_tokens_details).toBeUndefined();
      if (model.endsWith('-hello')) {
        // n-gram, from "Hello, there world!": "," taken and " there" refused after "Hello", the end taken after
        // " world!". The draft says "Hello world!": " world" refused after "Hello", "!" and the end taken.
        expect(g.kept).toBeGreaterThanOrEqual(2);
        expect(g.drafted! - g.kept!).toBeGreaterThan(0);
      }
      if (model === draft) expect(g.kept).toBe(g.drafted); // the model's own greedy reply
      console.log(
        `[speculative] ${model}, ${spec.kind}: ${g.kept} of ${g.drafted} guesses taken, ${guessed.usage.completion_tokens} tokens`,
      );
    });

    it('sampled with a seed: the same tokens as without guesses', async () => {
      const messages = history(2);
      const sample = { temperature: 0.9, top_k: 40, seed: 7, max_tokens: 24 } as const;
      const plain = await ask(engine, messages, { ...sample, ...PLAIN });
      const guessed = await ask(engine, messages, { ...sample, speculative: spec });
      expectSameAnswer(guessed, plain);
    });

    it('batched: three requests with guesses answer as each alone without', async () => {
      const prompts = [history(1), history(2), history(3)];
      const together = await Promise.all(prompts.map((m) => ask(engine, m, { max_tokens: 16, speculative: spec })));
      for (const [i, m] of prompts.entries()) {
        expectSameAnswer(together[i]!, await ask(engine, m, { max_tokens: 16, ...PLAIN }));
      }
    });
  });
});

describe('a draft model', () => {
  const withDraft = (opts: Parameters<typeof testEngine>[1] = {}) =>
    track(
      testEngine('qwen2-hello', { ...NO_CACHE, nCtx: 2048, draft: { path: modelPath('qwen2-hello-draft') }, ...opts }),
    );

  it('guesses for every request by default; speculative: null turns it off, { kind: ngram } takes n-gram guesses', async () => {
    const engine = await withDraft();
    expect((await engine.info()).model!.draft).toMatchObject({ nLayer: 1, nEmbd: 64 });
    const byDefault = await ask(engine, history(1), { max_tokens: 24 });
    expect(guesses(byDefault).drafted).toBeGreaterThan(0);
    const off = await ask(engine, history(1), { max_tokens: 24, speculative: null });
    expect(guesses(off).drafted).toBeUndefined();
    expectSameAnswer(byDefault, off);
    const before = inspect(engine).draftProfile!.guessed;
    const ngram = await ask(engine, history(3), { max_tokens: 24, speculative: NGRAM });
    expect(guesses(ngram).kept).toBeGreaterThanOrEqual(4);
    expect(inspect(engine).draftProfile!.guessed).toBe(before); // the draft model had no part in it
  });

  it("the next turn: the draft reads only what is new, and the answer is a cold engine's", async () => {
    const warm = await track(cachedEngine('qwen2-hello', { draft: { path: modelPath('qwen2-hello-draft') } }));
    const cold = await track(testEngine('qwen2-hello', { ...NO_CACHE, nCtx: 2048 }));
    const first = history(3);
    const r1 = await ask(warm, first, { max_tokens: 24 });
    expect(r1.usage.completion_tokens_details!.rejected_prediction_tokens).toBeGreaterThan(0); // cells dropped
    const read1 = inspect(warm).draftProfile!.read;
    expect(read1).toBeGreaterThanOrEqual(r1.usage.prompt_tokens); // the whole prompt
    const second = next(first, reply(r1), 'Greeting 4?');
    const r2 = await ask(warm, second, { max_tokens: 24 });
    expect(r2.timings.cache_source).toBe('memory');
    const newTokens = r2.usage.prompt_tokens - r2.usage.prompt_tokens_details.cached_tokens;
    // What the draft read this turn: the new prompt tokens (and the last reply's, which it had as guesses or not),
    // and its guesses: far less than the prompt.
    const read2 = inspect(warm).draftProfile!.read - read1;
    expect(read2).toBeLessThan(newTokens + 2 * r1.usage.completion_tokens + 2 * r2.usage.completion_tokens);
    expect(read2).toBeLessThan(r2.usage.prompt_tokens / 2);
    expect(guesses(r2).kept).toBeGreaterThan(0);
    expectSameAnswer(r2, await ask(cold, second, { max_tokens: 24 }));
  });

  it("after a reload the draft's cells come from IndexedDB with the model's: it reads only what is new, and the answer is a cold engine's", async () => {
    const db = newDb();
    const draft = { path: modelPath('qwen2-hello-draft') };
    const first = await track(cachedEngine('qwen2-hello', { db, draft }));
    const turn1 = history(3);
    const r1 = await ask(first, turn1, { max_tokens: 24, conversation_id: 'drafted' });
    await first.cache.flush();
    first.terminate();
    const turn2 = next(turn1, reply(r1), 'Greeting 4?');
    const cold = await track(testEngine('qwen2-hello', { ...NO_CACHE, nCtx: 2048 }));
    const want = await ask(cold, turn2, { max_tokens: 24 });

    const reloaded = await track(cachedEngine('qwen2-hello', { db, draft }));
    const r2 = await ask(reloaded, turn2, { max_tokens: 24, conversation_id: 'drafted' });
    expect(r2.timings.cache_source).toBe('indexeddb');
    expect(r2.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(r1.usage.prompt_tokens);
    // The new question and the reply, not the conversation (the engine before the reload read all of it).
    expect(inspect(reloaded).draftProfile!.read).toBeLessThan(r2.usage.prompt_tokens / 2);
    expect(guesses(r2).kept).toBeGreaterThan(0);
    expectSameAnswer(r2, want);
    reloaded.terminate();

    // The same record for an engine without a draft (the draft's chunks unused), and for one with another draft model
    // (whose cells it does not hold: that draft reads the conversation): both resume the model's cells.
    for (const other of [{}, { draft: { path: modelPath('qwen2-hello') } }]) {
      const e = await track(cachedEngine('qwen2-hello', { db, ...other }));
      const r = await ask(e, turn2, { max_tokens: 24, conversation_id: 'drafted' });
      expect(r.timings.cache_source).toBe('indexeddb');
      expectSameAnswer(r, want);
      if ('draft' in other) expect(inspect(e).draftProfile!.read).toBeGreaterThanOrEqual(r.usage.prompt_tokens);
      e.terminate();
    }
  });

  it('a draft restored from IndexedDB is the draft that read the conversation: a model as its own draft has every guess taken', async () => {
    // qwen2-tiny's text is random: its greedy guesses match its own reply only where the draft's cells are the ones
    // reading the conversation gives.
    const db = newDb();
    const self = { draft: { path: modelPath('qwen2-tiny') }, db };
    const turn1 = history(2);
    const first = await track(cachedEngine('qwen2-tiny', self));
    const r1 = await ask(first, turn1, { max_tokens: 16, conversation_id: 'self' });
    await first.cache.flush();
    first.terminate();
    const reloaded = await track(cachedEngine('qwen2-tiny', self));
    const r2 = await ask(reloaded, next(turn1, reply(r1), 'More?'), { max_tokens: 16, conversation_id: 'self' });
    expect(r2.timings.cache_source).toBe('indexeddb');
    expect(inspect(reloaded).draftProfile!.read).toBeLessThan(r2.usage.prompt_tokens / 2);
    const g = guesses(r2);
    expect(g.drafted).toBeGreaterThan(8);
    expect(g.kept).toBe(g.drafted);
  });

  it("a context that grows mid-conversation recreates the draft's: it reads again and the answers stay a cold engine's", async () => {
    // No nCtx: the context starts small and grows with demand.
    const engine = await track(
      testEngine('qwen2-hello', { ...NO_CACHE, draft: { path: modelPath('qwen2-hello-draft') } }),
    );
    const small = (await engine.info()).context!.nCtx;
    const long = history(Math.ceil(small / 20));
    const r = await ask(engine, long, { max_tokens: 16 });
    expect((await engine.info()).context!.nCtx).toBeGreaterThan(small);
    expect(guesses(r).kept).toBeGreaterThan(0);
    const cold = await track(testEngine('qwen2-hello', { ...NO_CACHE, nCtx: 4096 }));
    expectSameAnswer(r, await ask(cold, long, { max_tokens: 16 }));
  });

  it('an image in the conversation: the draft reads the text around it, and the answer is the one without guesses', async () => {
    const { model, mmproj } = await ensureMultimodal('qwen25vl-vision');
    const engine = await track(
      testEngine('qwen25vl-tiny', {
        ...NO_CACHE,
        path: model,
        projector: { path: mmproj },
        nCtx: 2048,
        draft: { path: model },
      }),
    );
    const url = `data:image/png;base64,${Buffer.from(testPng(64, 64, 3)).toString('base64')}`;
    const messages: ChatMessage[] = [
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url } },
          { type: 'text', text: 'What is in it?' },
        ],
      },
    ];
    const plain = await ask(engine, messages, { max_tokens: 16, ...PLAIN });
    const guessed = await ask(engine, messages, { max_tokens: 16 });
    expect(guesses(guessed).drafted).toBeGreaterThan(0);
    expectSameAnswer(guessed, plain);
  });

  it('refused at load: another vocabulary, or memory that cannot drop guesses (typed, and the engine still loads)', async () => {
    const engine = await track(testEngine('qwen2-hello', { ...NO_CACHE, nCtx: 2048 }));
    const other = engine.load({ path: modelPath('qwen2-hello') }, { draft: { path: modelPath('llama3-hello-draft') } });
    await expect(other).rejects.toMatchObject({ name: 'ModelLoadError', code: 'invalid_draft' });
    await expect(other).rejects.toThrow(/vocabulary has 128256 tokens/);
    const recurrent = engine.load({ path: modelPath('qwen2-hello') }, { draft: { path: modelPath('mamba-hello') } });
    await expect(recurrent).rejects.toMatchObject({ code: 'invalid_draft', message: /recurrent model's state/ });
    const missing = engine.load({ path: modelPath('qwen2-hello') }, { draft: { path: '/no/such/draft.gguf' } });
    await expect(missing).rejects.toMatchObject({ name: 'ModelLoadError', message: /^the draft model: / });
    await engine.load({ path: modelPath('qwen2-hello') }, { nCtx: 2048 });
    expect((await ask(engine, history(1))).choices[0]!.message.content).toBe('Hello, world!');
  });

  it('beside a model whose memory cannot drop guesses: not loaded, and said at load', async () => {
    const mamba = await track(
      testEngine('mamba-hello', { ...NO_CACHE, nCtx: 2048, draft: { path: modelPath('qwen2-hello-draft') } }),
    );
    const info = await mamba.info();
    expect(info.model!.warnings?.join(' ')).toMatch(/speculative decoding is off and the draft model not loaded/);
    expect(info.model!.draft).toBeUndefined();
    expect(guesses(await ask(mamba, history(1))).drafted).toBeUndefined();
  });

  it("kind 'draft' without a draft model, and p_min out of range, are typed errors that name the option", async () => {
    const engine = await track(testEngine('qwen2-hello', { ...NO_CACHE, nCtx: 2048 }));
    for (const [speculative, param] of [
      [DRAFT, 'speculative.kind'],
      [{ kind: 'draft', p_min: 1.5 }, 'speculative.p_min'],
      [{ kind: 'ngram', p_min: 0.5 }, 'speculative.p_min'],
    ] as const) {
      const err = await ask(engine, history(1), { speculative: speculative as never }).catch((e: unknown) => e);
      expect(err).toMatchObject({ name: 'InvalidRequestError', code: 'invalid_parameter', details: { param } });
    }
    expect((await ask(engine, history(1))).choices[0]!.message.content).toBe('Hello, world!');
  });
});

describe('speculative decoding: limits and refusals', () => {
  it('max_tokens and stop strings hold inside a step of accepted guesses', async () => {
    const engine = await track(testEngine('qwen2-hello', { ...NO_CACHE, nCtx: 2048 }));
    const messages = history(3);
    const short = await ask(engine, messages, { max_tokens: 2, speculative: NGRAM });
    expect(short.usage.completion_tokens).toBe(2);
    expect(short.choices[0]!.finish_reason).toBe('length');
    expect(short.choices[0]!.message.content).toBe('Hello,');
    const stopped = await ask(engine, messages, { max_tokens: 24, stop: [' world'], speculative: NGRAM });
    expect(stopped.choices[0]!.message.content).toBe('Hello,');
    expect(stopped.choices[0]!.finish_reason).toBe('stop');
    // …and the next request on the engine is not disturbed by the guesses it dropped.
    expectSameAnswer(await ask(engine, messages, { max_tokens: 24 }), await ask(engine, messages, { max_tokens: 24 }));
  });

  it('the cells a reply with guesses leaves are the reply: the next turn from the cache answers as a cold engine', async () => {
    const warm = await track(cachedEngine('qwen2-hello', { speculative: NGRAM }));
    const cold = await track(testEngine('qwen2-hello', { ...NO_CACHE, nCtx: 2048 }));
    const first: ChatMessage[] = [
      { role: 'system', content: 'You greet.' },
      { role: 'user', content: 'Greeting?' },
      { role: 'assistant', content: 'Hello, there world!' },
      { role: 'user', content: 'Greeting?' },
    ];
    const r1 = await ask(warm, first, { max_tokens: 24 });
    expect(r1.usage.completion_tokens_details!.rejected_prediction_tokens).toBeGreaterThan(0); // cells dropped
    const second = next(first, reply(r1), 'Greeting 4?');
    const r2 = await ask(warm, second, { max_tokens: 24 });
    expect(r2.timings.cache_source).toBe('memory');
    expect(r2.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(r1.usage.prompt_tokens);
    expectSameAnswer(r2, await ask(cold, second, { max_tokens: 24 }));
  });

  it('the engine default (LoadOptions.speculative) applies to every request; speculative: null turns it off', async () => {
    const engine = await track(testEngine('qwen2-hello', { ...NO_CACHE, nCtx: 2048, speculative: NGRAM }));
    const on = await ask(engine, history(3), { max_tokens: 24 });
    expect(guesses(on).kept).toBeGreaterThanOrEqual(4);
    const off = await ask(engine, history(3), { max_tokens: 24, speculative: null });
    expect(guesses(off).drafted).toBeUndefined();
    expectSameAnswer(on, off);
  });

  it('memory that cannot drop guesses refuses them with a typed error; the engine default is off there, said at load', async () => {
    const mamba = await track(testEngine('mamba-hello', { ...NO_CACHE, nCtx: 2048 }));
    const err = await ask(mamba, history(1), { speculative: NGRAM }).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'InvalidRequestError', code: 'unsupported_by_backend' });
    expect((err as Error).message).toMatch(/recurrent model's state cannot drop the guesses/);
    expect((await ask(mamba, history(1))).choices[0]!.message.content).toBe('Hello, world!'); // still answers
    const withDefault = await track(testEngine('mamba-hello', { ...NO_CACHE, nCtx: 2048, speculative: NGRAM }));
    expect((await withDefault.info()).model!.warnings?.join(' ')).toMatch(/speculative decoding is off/);
    expect(guesses(await ask(withDefault, history(1))).drafted).toBeUndefined();
  });

  it('bad options are typed errors that name the option', async () => {
    const engine = await track(testEngine('qwen2-hello', { ...NO_CACHE, nCtx: 2048 }));
    for (const [speculative, param] of [
      [{ kind: 'drafts' }, 'speculative.kind'],
      [{ kind: 'ngram', n_draft: 0 }, 'speculative.n_draft'],
      [{ kind: 'ngram', n_draft: 17 }, 'speculative.n_draft'],
      [{ kind: 'ngram', draft: 3 }, 'speculative.draft'],
      ['ngram', 'speculative'],
    ] as const) {
      const err = await ask(engine, history(1), { speculative: speculative as never }).catch((e: unknown) => e);
      expect(err).toMatchObject({ name: 'InvalidRequestError', code: 'invalid_parameter', details: { param } });
    }
    await expect(engine.load({ path: 'x' }, { speculative: { kind: 'x' } as never })).rejects.toMatchObject({
      code: 'invalid_parameter',
    });
    // An engine default of the draft's guesses without a draft: refused at load, not at every request after it.
    await expect(engine.load({ path: 'x' }, { speculative: { kind: 'draft' } })).rejects.toMatchObject({
      code: 'invalid_parameter',
      details: { param: 'speculative.kind' },
    });
    expect((await ask(engine, history(1))).choices[0]!.message.content).toBe('Hello, world!'); // still loaded
  });
});
