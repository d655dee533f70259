// Speculative decoding with n-gram guesses (speculative: { kind: 'ngram' }): the reply is the one the model writes
// without guesses — greedy token for token, sampled with the same seed the same tokens (each token is the model's own
// sample: llama.cpp's rule) — alone and batched, on every architecture whose memory can drop the guesses it does not
// take; usage and timings count the guesses. Memory that cannot (recurrent, hybrid, a window-sized sliding window)
// refuses it with a typed error.
import { beforeAll, describe, expect, it } from 'vitest';
import type { NodeEngine } from '../src/node.ts';
import type { ChatCompletion, ChatMessage } from '../src/types.ts';
import type { ModelName } from './fixtures/models.ts';
import { ask, cachedEngine, expectSameAnswer, next, NO_CACHE, reply, testEngine, trackEngines } from './helpers.ts';

const track = trackEngines();
const NGRAM = { kind: 'ngram' as const, n_draft: 4 };

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
  ['qwen2-hello', {}],
  ['llama3-hello', {}],
  ['gemma3-hello', {}], // a full-size sliding-window cache rolls back
  ['qwen2-tiny', {}], // random text: guesses are mostly refused
  ['qwen25vl-tiny', {}], // M-RoPE positions
  ['qwen3vl-tiny', {}], // interleaved M-RoPE, deepstack
] as Array<[ModelName, object]>)('%s', (model, load) => {
  let engine: NodeEngine;
  beforeAll(async () => {
    engine = await track(testEngine(model, { ...NO_CACHE, nCtx: 2048, ...load }));
  });

  it('greedy: the same tokens and log-probabilities as without guesses; usage and timings count them', async () => {
    // An earlier answer the model is asked for again, with words put in its middle: guesses from it are taken up to
    // there, refused there, and taken again after.
    const ask1: ChatMessage[] = [
      { role: 'system', content: 'You greet.' },
      { role: 'user', content: 'Greeting?' },
    ];
    const text = (await ask(engine, ask1, { max_tokens: 24 })).choices[0]!.message.content!;
    const mid = Math.floor(text.length / 2);
    const messages: ChatMessage[] = [
      ...ask1,
      { role: 'assistant', content: `${text.slice(0, mid)} there${text.slice(mid)}` },
      { role: 'user', content: 'Greeting?' },
    ];
    const plain = await ask(engine, messages, { max_tokens: 24 });
    const guessed = await ask(engine, messages, { max_tokens: 24, speculative: NGRAM });
    expectSameAnswer(guessed, plain);
    const g = guesses(guessed);
    expect(g.drafted).toBeGreaterThanOrEqual(g.kept!);
    expect(g.usage).toEqual({ accepted_prediction_tokens: g.kept, rejected_prediction_tokens: g.drafted! - g.kept! });
    expect(guesses(plain).drafted).toBeUndefined();
    expect(plain.usage.completion_tokens_details).toBeUndefined();
    if (model.endsWith('-hello')) {
      // From "Hello, there world!": "," taken and " there" refused after "Hello", the end taken after " world!".
      expect(g.kept).toBeGreaterThanOrEqual(2);
      expect(g.drafted! - g.kept!).toBeGreaterThan(0);
    }
    console.log(
      `[speculative] ${model}: ${g.kept} of ${g.drafted} guesses taken, ${guessed.usage.completion_tokens} tokens`,
    );
  });

  it('sampled with a seed: the same tokens as without guesses', async () => {
    const messages = history(2);
    const sample = { temperature: 0.9, top_k: 40, seed: 7, max_tokens: 24 } as const;
    const plain = await ask(engine, messages, sample);
    const guessed = await ask(engine, messages, { ...sample, speculative: NGRAM });
    expectSameAnswer(guessed, plain);
  });

  it('batched: three requests with guesses answer as each alone without', async () => {
    const prompts = [history(1), history(2), history(3)];
    const together = await Promise.all(prompts.map((m) => ask(engine, m, { max_tokens: 16, speculative: NGRAM })));
    for (const [i, m] of prompts.entries()) expectSameAnswer(together[i]!, await ask(engine, m, { max_tokens: 16 }));
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
      [{ kind: 'draft' }, 'speculative.kind'],
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
  });
});
