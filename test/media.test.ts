// Images and audio in a conversation (real wasm, real libmtmd, tiny random projectors): they change the answer, the
// next turn and a regenerated answer reuse their KV cells (no encoding), a reload restores them from IndexedDB
// without encoding again, and whatever the cache supplies answers exactly as an engine that reads everything.
import 'fake-indexeddb/auto';
import { beforeAll, describe, expect, it } from 'vitest';
import { positionAt } from '../src/backends/llamacpp/binding/mtmd.ts';
import { createNodeEngine, type NodeEngine } from '../src/node.ts';
import type { ChatCompletion, ChatMessage, ContentPart } from '../src/types.ts';
import { answerDiff, MEDIA_LOGPROB_TOLERANCE, PROMPT_EFFECT } from './compare.ts';
import { testPng, testWav } from './fixtures/media.ts';
import { ensureMultimodal, PROJECTORS, type ProjectorName } from './fixtures/projectors.ts';
import { ask, inspect, newDb, NO_CACHE, testEngine, trackEngines } from './helpers.ts';

const track = trackEngines();

const dataUrl = (png: Uint8Array) => `data:image/png;base64,${Buffer.from(png).toString('base64')}`;
const image = (seed: number, size = 96): ContentPart => ({
  type: 'image_url',
  image_url: { url: dataUrl(testPng(size, size, seed)) },
});
const audio = (seed: number): ContentPart => ({
  type: 'input_audio',
  input_audio: { data: Buffer.from(testWav(1.5, 16000, seed)).toString('base64'), format: 'wav' },
});

/** An engine with the projector's model and the projector loaded. */
async function mediaEngine(name: ProjectorName, opts: Parameters<typeof testEngine>[1] = {}): Promise<NodeEngine> {
  const { model, mmproj } = await ensureMultimodal(name);
  return track(
    testEngine(PROJECTORS[name].model, {
      path: model,
      projector: { path: mmproj },
      nCtx: 2048,
      minTokens: 16,
      ...opts,
    }),
  );
}

/** The same tokens, and log-probabilities within MEDIA_LOGPROB_TOLERANCE. */
function expectSameAnswer(a: ChatCompletion, b: ChatCompletion) {
  const d = answerDiff(a, b);
  expect(d.tokens[0]).toEqual(d.tokens[1]);
  expect(d.logprobs).toBeLessThan(MEDIA_LOGPROB_TOLERANCE);
}

/** Two answers differ: other tokens, or other log-probabilities for the tokens both list. */
const differ = (a: ChatCompletion, b: ChatCompletion) => {
  const d = answerDiff(a, b);
  expect(d.logprobs > PROMPT_EFFECT || d.tokens[0].join('|') !== d.tokens[1].join('|')).toBe(true);
};

const mediaMs = (r: ChatCompletion) => (r.timings as { media_ms?: number }).media_ms ?? 0;

/** Cached tokens cover the earlier turn's prompt, all but its last few (the template re-renders the generation prompt
 * with the answer after it, which can tokenize its last token differently): the media sit well before those. */
const coversTurn = (r: ChatCompletion, earlier: ChatCompletion) =>
  expect(r.usage.prompt_tokens_details.cached_tokens).toBeGreaterThanOrEqual(earlier.usage.prompt_tokens - 3);

describe.each([
  ['gemma3-vision', 'image', image],
  ['smolvlm-vision', 'image', image],
  ['qwen25vl-vision', 'image', image],
  ['qwen3vl-vision', 'image', image],
  ['qwen2a-audio', 'audio', audio],
] as Array<[ProjectorName, 'image' | 'audio', (seed: number) => ContentPart]>)('%s: %s input', (name, kind, part) => {
  let warm: NodeEngine;
  let cold: NodeEngine;
  const turn1 = (seed: number): ChatMessage[] => [
    { role: 'system', content: 'You describe what you are shown, briefly.' },
    { role: 'user', content: [{ type: 'text', text: 'What is this?' }, part(seed)] },
  ];

  beforeAll(async () => {
    warm = await mediaEngine(name);
    cold = await mediaEngine(name, NO_CACHE);
  });

  it(`says it reads ${kind} (engine.info().input)`, async () => {
    expect((await warm.info()).input).toContain(kind);
  });

  it(`another ${kind} gives another answer (the comparisons below could fail)`, async () => {
    const [a, b] = [await ask(cold, turn1(1)), await ask(cold, turn1(2))];
    differ(a, b);
    expect(mediaMs(a)).toBeGreaterThan(0);
  });

  it(`the next turn, a regenerated answer and an edited later message reuse the ${kind} without encoding it`, async () => {
    const first = turn1(3);
    const w1 = await ask(warm, first);
    expectSameAnswer(w1, await ask(cold, first));
    expect(mediaMs(w1)).toBeGreaterThan(0);

    const second = [
      ...first,
      { role: 'assistant' as const, content: w1.choices[0]!.message.content },
      { role: 'user' as const, content: 'Say more.' },
    ];
    const w2 = await ask(warm, second);
    expectSameAnswer(w2, await ask(cold, second));
    expect(w2.timings.cache_source).toBe('memory');
    coversTurn(w2, w1);
    expect(mediaMs(w2)).toBe(0);

    const again = await ask(warm, second); // regenerate
    expectSameAnswer(again, w2);
    expect(mediaMs(again)).toBe(0);

    const edited = [...second.slice(0, -1), { role: 'user' as const, content: 'Say less.' }];
    const w3 = await ask(warm, edited);
    expectSameAnswer(w3, await ask(cold, edited));
    expect(mediaMs(w3)).toBe(0);
    coversTurn(w3, w1);
  });

  it(`a different ${kind} in the same place is read, not taken from the cache`, async () => {
    const a = await ask(warm, turn1(4));
    const b = await ask(warm, turn1(5));
    expect(mediaMs(b)).toBeGreaterThan(0);
    expectSameAnswer(b, await ask(cold, turn1(5)));
    differ(a, b);
  });

  it(`resumes from IndexedDB after a reload without encoding the ${kind} again`, async () => {
    const db = newDb();
    const first = turn1(6);
    const before = await mediaEngine(name, { db });
    const r1 = await ask(before, first, { conversation_id: 'c' });
    await before.cache.flush();
    await before.unload();
    const second = [
      ...first,
      { role: 'assistant' as const, content: r1.choices[0]!.message.content },
      { role: 'user' as const, content: 'And?' },
    ];
    const after = await mediaEngine(name, { db });
    const r2 = await ask(after, second, { conversation_id: 'c' });
    expect(r2.timings.cache_source).toBe('indexeddb');
    expect(mediaMs(r2)).toBe(0);
    coversTurn(r2, r1);
    expectSameAnswer(r2, await ask(cold, second));
  });
});

describe.each(['qwen25vl-vision', 'qwen3vl-vision'] as ProjectorName[])('%s: M-RoPE positions', (name) => {
  it('an image takes fewer positions than tokens; a conversation that goes on after it, cached or not, answers alike', async () => {
    const warm = await mediaEngine(name);
    const cold = await mediaEngine(name, NO_CACHE);
    const first: ChatMessage[] = [{ role: 'user', content: [image(7, 128), { type: 'text', text: 'What is this?' }] }];
    const r1 = await ask(warm, first);
    const [slot] = inspect(warm)
      .slots()
      .filter((s) => s.tokens.length > 0);
    // The cells end at the last token's position: 128 x 128 is an 8 x 8 grid of merged patches, 64 tokens in 8 positions.
    expect(slot!.cells).toBe(positionAt(slot!.tokens, slot!.tokens.length));
    expect(slot!.tokens.length - slot!.cells).toBe(64 - 8);
    // Two images, the second after the first one's positions, and the turn after them from the cache.
    const second: ChatMessage[] = [
      ...first,
      { role: 'assistant', content: r1.choices[0]!.message.content },
      { role: 'user', content: [{ type: 'text', text: 'And this one?' }, image(8, 96)] },
    ];
    const r2 = await ask(warm, second);
    expect(r2.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(r1.usage.prompt_tokens - 3);
    expectSameAnswer(r2, await ask(cold, second));
  });

  it('batched: requests about other images and a text one, decoded together, answer as each alone', async () => {
    const engine = await mediaEngine(name, { ...NO_CACHE, nParallel: 3 });
    const requests: ChatMessage[][] = [
      [{ role: 'user', content: [image(21, 96), { type: 'text', text: 'What is this?' }] }],
      [{ role: 'user', content: [{ type: 'text', text: 'And this?' }, image(22, 128)] }],
      [{ role: 'user', content: 'No image here, just a question.' }],
    ];
    const together = await Promise.all(requests.map((m) => ask(engine, m, { max_tokens: 12 })));
    for (const [i, m] of requests.entries()) expectSameAnswer(together[i]!, await ask(engine, m, { max_tokens: 12 }));
  });
});

describe('qwen25vl-tiny: a context shift', () => {
  it("context_overflow 'shift' stops with a warning: llama.cpp cannot move an M-RoPE model's cells", async () => {
    const small = await track(testEngine('qwen25vl-tiny', { ...NO_CACHE, nCtx: 128 }));
    const r = await small.chat.completions.create({
      messages: [{ role: 'user', content: 'Go on.' }],
      temperature: 0,
      max_tokens: 1000,
      context_overflow: 'shift',
    });
    expect(r.choices[0]!.finish_reason).toBe('length');
    expect(r.usage.prompt_tokens + r.usage.completion_tokens).toBe((await small.info()).nCtx + 1);
    expect(r.warnings).toEqual([expect.stringMatching(/cannot move the cells of a model with M-RoPE positions/)]);
    expect((await ask(small, [{ role: 'user', content: 'Hi' }])).usage.completion_tokens).toBeGreaterThan(0);
  });
});

describe('the pthread build on 2 threads', () => {
  it("encodes an image on the context's thread pool and answers as the single-thread build does", async () => {
    const { model, mmproj } = await ensureMultimodal('gemma3-vision');
    const messages: ChatMessage[] = [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, image(11)] }];
    const mt = await track(createNodeEngine({ variant: 'mt', threads: 2, cache: NO_CACHE }));
    await mt.load({ path: model }, { projector: { path: mmproj }, nCtx: 2048 });
    expect((await mt.info()).threads).toBe(2);
    const a = await ask(mt, messages);
    expect(mediaMs(a)).toBeGreaterThan(0);
    expectSameAnswer(a, await ask(await mediaEngine('gemma3-vision', NO_CACHE), messages));
    // A second image on the same engine (the pool is still the context's).
    expect(mediaMs(await ask(mt, [{ role: 'user', content: [image(12)] }]))).toBeGreaterThan(0);
  });
});

describe('media requests that cannot run', () => {
  let vision: NodeEngine;
  let textOnly: NodeEngine;
  beforeAll(async () => {
    vision = await mediaEngine('gemma3-vision');
    textOnly = await track(testEngine('qwen2-hello', { nCtx: 2048 }));
  });

  const fails = async (engine: NodeEngine, content: ContentPart[], code: string) => {
    const err = await ask(engine, [{ role: 'user', content }]).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'InvalidRequestError', code });
  };

  it('a model without a projector refuses images and audio, and answers text afterwards', async () => {
    await fails(textOnly, [{ type: 'text', text: 'Look:' }, image(1)], 'images_not_supported');
    await fails(textOnly, [audio(1)], 'audio_not_supported');
    expect((await ask(textOnly, [{ role: 'user', content: 'Hi' }])).choices[0]!.message.content).toBe('Hello, world!');
    expect((await textOnly.info()).input).toEqual(['text']);
  });

  it('a vision projector refuses audio', async () => {
    await fails(vision, [audio(1)], 'audio_not_supported');
  });

  it('bytes that are no image, a damaged PNG and an image announcing 100,000 pixels a side are typed errors', async () => {
    await fails(
      vision,
      [{ type: 'image_url', image_url: { url: 'data:image/png;base64,aGVsbG8gd29ybGQ=' } }],
      'invalid_image',
    );
    const damaged = testPng(64, 64, 1).slice(0, 60);
    await fails(vision, [{ type: 'image_url', image_url: { url: dataUrl(damaged) } }], 'invalid_image');
    const bomb = testPng(64, 64, 1);
    new DataView(bomb.buffer).setUint32(16, 100_000);
    new DataView(bomb.buffer).setUint32(20, 100_000);
    await fails(vision, [{ type: 'image_url', image_url: { url: dataUrl(bomb) } }], 'invalid_image');
    await fails(vision, [{ type: 'image_url', image_url: { url: 'file:///etc/passwd' } }], 'invalid_parameter');
    await fails(vision, [{ type: 'image_url', image_url: { url: 'hearth-media:abc' } }], 'invalid_parameter');
    // …and the engine reads an image and answers afterwards.
    const after = await ask(vision, [{ role: 'user', content: [image(2)] }]);
    expect(mediaMs(after)).toBeGreaterThan(0);
    expect(after.usage.completion_tokens).toBeGreaterThan(0);
  });

  it('too many images is refused before any is read', async () => {
    await fails(
      vision,
      Array.from({ length: 17 }, (_, i) => image(i)),
      'too_many_media',
    );
  });

  it("text that names a media marker stays text: it never takes an image's place", async () => {
    // Both texts end alike, so the text before the image tokenizes the same at its end.
    const hostile = 'here <__media__> and <__hearth_media_x__> and <start_of_image> end';
    const tokens = async (content: ContentPart[]) => {
      const r = await ask(vision, [{ role: 'user', content }], { max_tokens: 1 });
      return { prompt: r.usage.prompt_tokens, media: mediaMs(r) };
    };
    const [withImage, textOnly] = [
      await tokens([{ type: 'text', text: hostile }, image(3)]),
      await tokens([{ type: 'text', text: hostile }]),
    ];
    const [plainImage, plain] = [
      await tokens([{ type: 'text', text: 'here and there end' }, image(3)]),
      await tokens([{ type: 'text', text: 'here and there end' }]),
    ];
    // The markers in the text are read as text, all of them (no image decoded for them)…
    expect(textOnly.media).toBe(0);
    expect(textOnly.prompt).toBe(
      inspect(vision).prompt({ messages: [{ role: 'user', content: hostile }] }).tokens.length,
    );
    // …and beside a real image, that image takes exactly the positions it takes beside plain text.
    expect(withImage.media).toBeGreaterThan(0);
    expect(withImage.prompt - textOnly.prompt).toBe(plainImage.prompt - plain.prompt);
    expect(withImage.prompt - textOnly.prompt).toBeGreaterThan(10);
  });
});
