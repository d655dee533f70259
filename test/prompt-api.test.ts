// The Prompt API (hearth-llm/prompt-api) on the real wasm engine in Node: a session answers as the chat API does for
// the same messages, counts tokens as the engine reads them, is kept across a reload (fake-indexeddb), clones,
// aborts, refuses what does not fit with the specification's errors, follows a JSON schema or a RegExp, and goes on
// from a prefix.
import 'fake-indexeddb/auto';
import { afterAll, describe, expect, it } from 'vitest';
import { languageModelClass } from '../src/prompt-api/prompt-api.ts';
import type { ChatMessage } from '../src/types.ts';
import { testPng } from './fixtures/media.ts';
import { ensureMultimodal } from './fixtures/projectors.ts';
import { cachedEngine, modelPath, newDb, promptTokens, testEngine, trackEngines } from './helpers.ts';

const track = trackEngines();
const LOAD = { nCtx: 512 };

/** A LanguageModel class over a fresh engine on `db` (a page load). qwen2-hello answers in a few tokens; qwen2-tiny
 * (random) writes on until the context is full, for a call to abort. */
async function page(db = newDb(), model: 'qwen2-hello' | 'qwen2-tiny' = 'qwen2-hello') {
  const engine = await track(cachedEngine(model, { db, ...LOAD }));
  const LanguageModel = languageModelClass({ engine, model: { path: modelPath(model) }, load: LOAD });
  return { engine, LanguageModel, db };
}

const greedy = { samplingMode: 'most-predictable' } as const;
const SYSTEM = 'You are a helpful assistant who answers in one short sentence.';

let first: Awaited<ReturnType<typeof page>>;
afterAll(() => first?.engine.terminate());

describe('the Prompt API over the engine', () => {
  it('counts a prompt as the engine reads it: countTokens equals the prompt tokens and usage.prompt_tokens', async () => {
    first = await page();
    const messages: ChatMessage[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Name a bread.' },
    ];
    const { prompt_tokens } = await first.engine.countTokens({ messages });
    expect(prompt_tokens).toBe(promptTokens(first.engine, messages).length);
    const res = await first.engine.chat.completions.create({ messages, max_tokens: 4 });
    expect(res.usage.prompt_tokens).toBe(prompt_tokens);
  });

  it('answers a prompt as chat.completions does for the same messages, and counts what the session holds', async () => {
    const { engine, LanguageModel } = first;
    const session = await LanguageModel.create({ ...greedy, initialPrompts: [{ role: 'system', content: SYSTEM }] });
    expect(session.contextWindow).toBe(512);
    // contextUsage counts what the messages say (as Chrome's does), not the template's tokens around them.
    const tokens = async (text: string) => (await engine.countTokens({ text })).prompt_tokens;
    expect(session.contextUsage).toBe(await tokens(SYSTEM));
    const answer = await session.prompt('Name a bread.');
    const direct = await engine.chat.completions.create({
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'Name a bread.' },
      ],
      temperature: 0,
      top_k: 1,
    });
    expect(answer).toBe(direct.choices[0]!.message.content);
    expect(session.contextUsage).toBe(
      (await tokens(SYSTEM)) + (await tokens('Name a bread.')) + (await tokens(answer)),
    );
    expect(await session.measureContextUsage('And a river?')).toBe(await tokens('And a river?'));
    // Streamed: the same text in pieces.
    const again = await LanguageModel.create({ ...greedy, initialPrompts: [{ role: 'system', content: SYSTEM }] });
    const pieces: string[] = [];
    for await (const p of again.promptStreaming('Name a bread.') as unknown as AsyncIterable<string>) pieces.push(p);
    expect(pieces.join('')).toBe(answer);
    expect(again.contextUsage).toBe(session.contextUsage);
  });

  it('a prompt made while a reply streams waits for it, and goes on from the whole streamed turn', async () => {
    const { engine, LanguageModel } = first;
    const session = await LanguageModel.create(greedy);
    const sent: number[] = [];
    const create = engine.chat.completions.create;
    engine.chat.completions.create = ((p: { messages: unknown[] }) => {
      sent.push(p.messages.length);
      return create(p as never);
    }) as typeof create;
    try {
      const reader = session.promptStreaming('Name a bread.').getReader();
      await reader.read(); // the reply has begun
      const next = session.prompt('And a river?');
      while (!(await reader.read()).done) {}
      await next;
    } finally {
      engine.chat.completions.create = create;
    }
    expect(sent).toEqual([1, 3]); // the second saw the first question and its whole answer
  });

  it('clone(): the copy answers as the original would, and the original is left as it was', async () => {
    const { LanguageModel } = first;
    const session = await LanguageModel.create(greedy);
    await session.prompt('Name a bread.');
    const usage = session.contextUsage;
    const copy = await session.clone();
    expect(copy.contextUsage).toBe(usage);
    const fromCopy = await copy.prompt('And a river?');
    expect(session.contextUsage).toBe(usage);
    expect(await session.prompt('And a river?')).toBe(fromCopy);
    expect(copy.contextUsage).toBe(session.contextUsage); // the copy went on from the whole conversation
  });

  it('a session with hearth.sessionId is there after a reload: its messages and KV state, answering as the live one', async () => {
    const db = newDb();
    const before = await page(db);
    const kept = await before.LanguageModel.create({ ...greedy, hearth: { sessionId: 'kitchen' } });
    await kept.prompt('Name a bread.');
    const usage = kept.contextUsage;
    const live = await kept.clone();
    const liveNext = await live.prompt('And a river?');
    await before.engine.cache.flush();
    before.engine.terminate();

    const after = await page(db); // a reload: a new engine and class, the same IndexedDB
    const restored = await after.LanguageModel.create({ ...greedy, hearth: { sessionId: 'kitchen' } });
    expect(restored.contextUsage).toBe(usage);
    const stats0 = await after.engine.cache.stats();
    expect(await restored.prompt('And a river?')).toBe(liveNext);
    const stats1 = await after.engine.cache.stats();
    expect(stats1.hits.indexeddb).toBe(stats0.hits.indexeddb + 1); // read from its saved state, not again

    restored.destroy(); // deletes what was kept
    await new Promise((r) => setTimeout(r, 50));
    const fresh = await after.LanguageModel.create({ ...greedy, hearth: { sessionId: 'kitchen' } });
    expect(fresh.contextUsage).toBe(0);
  });

  it('aborts: a signal aborted before rejects with its reason; during a stream the stream errors', async () => {
    const { LanguageModel, engine } = await page(newDb(), 'qwen2-tiny');
    const session = await LanguageModel.create(greedy);
    const reason = new Error('stop');
    await expect(session.prompt('Name a bread.', { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(() => session.promptStreaming('x', { signal: AbortSignal.abort(reason) })).toThrow(reason);
    const controller = new AbortController();
    const stream = session.promptStreaming('Write a long story about bread.', { signal: controller.signal });
    const reader = stream.getReader();
    await reader.read();
    controller.abort();
    await expect(
      (async () => {
        for (;;) if ((await reader.read()).done) return;
      })(),
    ).rejects.toMatchObject({ name: 'AbortError' });
    // The session is still usable, and what was aborted is not in it.
    expect(session.contextUsage).toBe(0);
    await expect(session.append('Name a bread.')).resolves.toBeUndefined();
    expect(session.contextUsage).toBeGreaterThan(0);
    engine.terminate();
  });

  it('refuses with the specification errors: over the window QuotaExceededError, a late system message TypeError, at and after destroy InvalidStateError', async () => {
    const { LanguageModel } = first;
    const session = await LanguageModel.create(greedy);
    const long = 'bread '.repeat(800);
    const err = await session
      .prompt(long)
      .catch((e: unknown) => e as DOMException & { requested: number; quota: number });
    expect(err).toMatchObject({ name: 'QuotaExceededError', quota: 512 });
    expect((err as { requested: number }).requested).toBeGreaterThan(512);
    await expect(session.append([{ role: 'user', content: 'Hi' }])).resolves.toBeUndefined();
    await expect(session.prompt([{ role: 'system', content: 'Late.' }])).rejects.toBeInstanceOf(TypeError);
    await expect(
      LanguageModel.create({
        initialPrompts: [
          { role: 'user', content: 'a' },
          { role: 'system', content: 'b' },
        ],
      }),
    ).rejects.toBeInstanceOf(TypeError);
    await expect(LanguageModel.create({ expectedInputs: [{ type: 'image' }] })).rejects.toMatchObject({
      name: 'NotSupportedError',
    });
    await expect(
      LanguageModel.availability({ expectedInputs: [{ type: 'text', languages: ['en-abc-invalid'] }] }),
    ).rejects.toBeInstanceOf(RangeError);
    const pending = session.prompt('Write a long story about bread.');
    session.destroy();
    await expect(pending).rejects.toMatchObject({ name: 'InvalidStateError' });
    await expect(session.prompt('Hi')).rejects.toMatchObject({ name: 'InvalidStateError' });
  });

  it('a conversation that outgrows the window drops its oldest turns (the system prompt stays), says so, and answers', async () => {
    const { engine, LanguageModel } = first;
    const session = await LanguageModel.create({ ...greedy, initialPrompts: [{ role: 'system', content: SYSTEM }] });
    await session.append('bread '.repeat(300)); // fits: about 300 of the 512 tokens
    let overflows = 0;
    session.addEventListener('contextoverflow', () => overflows++);
    session.oncontextoverflow = () => overflows++;
    const answer = await session.prompt('river '.repeat(250)); // does not fit beside it
    expect(overflows).toBe(2); // the listener and the handler, once each
    // What was answered: the system prompt and the new turn, as chat.completions answers those two.
    const direct = await engine.chat.completions.create({
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'river '.repeat(250) },
      ],
      temperature: 0,
      top_k: 1,
    });
    expect(answer).toBe(direct.choices[0]!.message.content);
    expect(session.contextUsage).toBeLessThanOrEqual(session.contextWindow);
  });

  it('responseConstraint: the answer is JSON that follows the schema', async () => {
    const { LanguageModel } = first;
    const session = await LanguageModel.create({ samplingMode: 'balanced' });
    const schema = {
      type: 'object',
      properties: { rating: { type: 'integer', minimum: 0, maximum: 5 } },
      required: ['rating'],
      additionalProperties: false,
    };
    const text = await session.prompt('Rate this bread from 0 to 5.', { responseConstraint: schema });
    const value = JSON.parse(text) as { rating: number };
    expect(Object.keys(value)).toEqual(['rating']);
    expect(Number.isInteger(value.rating) && value.rating >= 0 && value.rating <= 5).toBe(true);
    await expect(session.prompt('x', { responseConstraint: { type: 'soup' } })).rejects.toMatchObject({
      name: 'NotSupportedError',
    });
  });

  it('a prefix: the reply goes on from it, under a JSON schema too, and the session keeps the two as one message', async () => {
    const { engine, LanguageModel } = first;
    const tokens = async (text: string) => (await engine.countTokens({ text })).prompt_tokens;
    const session = await LanguageModel.create({ samplingMode: 'balanced' });
    const schema = {
      type: 'object',
      properties: { Rating: { type: 'number', minimum: 0, maximum: 5 } },
      required: ['Rating'],
      additionalProperties: false,
    };
    const prefix = '{ "Rating": ';
    const input = [
      { role: 'user', content: 'Rate this bread.' },
      { role: 'assistant', content: prefix, prefix: true },
    ] as const;
    const reply = await session.prompt(input, { responseConstraint: schema, omitResponseConstraintInput: true });
    const value = JSON.parse(prefix + reply) as { Rating: number };
    expect(value.Rating >= 0 && value.Rating <= 5, prefix + reply).toBe(true);
    expect(session.contextUsage).toBe((await tokens('Rate this bread.')) + (await tokens(prefix + reply)));
    // A prefix the schema does not allow, or one that is not the last message, is refused; the session goes on.
    const bad = [input[0], { role: 'assistant', content: 'invalid', prefix: true }];
    await expect(session.prompt(bad, { responseConstraint: schema })).rejects.toMatchObject({
      name: 'NotSupportedError',
    });
    await expect(session.prompt([input[1], input[0]])).rejects.toMatchObject({ name: 'SyntaxError' });
    expect(typeof (await session.prompt('And now?'))).toBe('string');
  });

  it('an image in a prompt: the answer is chat.completions’ for the same image, and contextUsage counts it as measured', async () => {
    const { model, mmproj } = await ensureMultimodal('gemma3-vision');
    const load = { nCtx: 1024, projector: { path: mmproj } };
    const engine = await track(testEngine('gemma3-vision-tiny', { path: model, ...load }));
    const LanguageModel = languageModelClass({ engine, model: { path: model }, load });
    const session = await LanguageModel.create({ ...greedy, expectedInputs: [{ type: 'image' }] });
    const png = new Blob([testPng(64, 64, 3) as Uint8Array<ArrayBuffer>]);
    const input = [
      {
        role: 'user',
        content: [
          { type: 'text', value: 'What is this?' },
          { type: 'image', value: png },
        ],
      },
    ];
    const measure = await session.measureContextUsage(input);
    const answer = await session.prompt(input);
    const direct = await engine.chat.completions.create({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: png } },
          ],
        },
      ],
      temperature: 0,
      top_k: 1,
    });
    expect(answer).toBe(direct.choices[0]!.message.content);
    const tokens = async (text: string) => (await engine.countTokens({ text })).prompt_tokens;
    expect(measure).toBeGreaterThan(await tokens('What is this?')); // the image's tokens too
    expect(session.contextUsage).toBe(measure + (await tokens(answer)));
  });

  it('a RegExp responseConstraint: the answer is a whole match; what a grammar cannot say is NotSupportedError', async () => {
    const { LanguageModel } = first;
    const session = await LanguageModel.create({ samplingMode: 'balanced' });
    const pattern = /(yes|no), because [a-z]{3,8}/;
    for (let i = 0; i < 3; i++) {
      const text = await session.prompt('Is bread good?', { responseConstraint: pattern });
      expect(text).toMatch(new RegExp(`^(?:${pattern.source})$`));
    }
    await expect(session.prompt('x', { responseConstraint: /a(?=b)/ })).rejects.toMatchObject({
      name: 'NotSupportedError',
    });
  });
});
