// Images and audio through the public API in a browser: a model loaded with its projector by URL (through the model
// store), an image sent as a File and as a data: URL, an audio clip as base64. The next turn reuses the media's KV
// cells without encoding them, a page reload restores them from the real IndexedDB without encoding, and the answer
// equals a cold engine's to the log-probability.
import {
  answerDiff,
  COMPARABLE,
  GPU_MEDIA_TOLERANCE,
  MEDIA_LOGPROB_TOLERANCE,
  PROMPT_EFFECT,
} from '../test/compare.ts';
import { testPng, testWav } from '../test/fixtures/media.ts';
import { PROJECTORS, type ProjectorName } from '../test/fixtures/projectors.ts';
import { expect, type HarnessPage, openEngine, test } from './fixtures.ts';

type Part = { type: 'text'; text: string } | { file: string; kind: 'image' | 'audio'; as: 'file' | 'data' };
type Msg = { role: 'system' | 'user' | 'assistant'; content: string | Part[] };

// Conversations from 16 tokens are saved (the image test's is shorter than the default 100).
async function start(harness: HarnessPage, name: ProjectorName, cache: Record<string, unknown> = { minTokens: 16 }) {
  await openEngine(harness, { cache });
  await harness.evaluate(({ model, mmproj }) => window.engine.load(model, { nCtx: 2048, projector: mmproj }), {
    model: `/test-models/${PROJECTORS[name].model}.gguf`,
    mmproj: `/test-models/${name}.mmproj.gguf`,
  });
}

/** Asks with the media parts built in the page: a File, or a data: URL (images) / base64 (audio). */
const ask = (harness: HarnessPage, messages: Msg[]) =>
  harness.evaluate(
    async ({ messages, comparable }) => {
      const bytes = (b64: string) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const content = (c: Msg['content']) =>
        typeof c === 'string'
          ? c
          : c.map((p) => {
              if ('text' in p) return p;
              if (p.kind === 'image') {
                const url =
                  p.as === 'file'
                    ? new File([bytes(p.file)], 'photo.png', { type: 'image/png' })
                    : `data:image/png;base64,${p.file}`;
                return { type: 'image_url' as const, image_url: { url } };
              }
              const data = p.as === 'file' ? new File([bytes(p.file)], 'note.wav', { type: 'audio/wav' }) : p.file;
              return { type: 'input_audio' as const, input_audio: { data, format: 'wav' as const } };
            });
      return window.engine.chat.completions.create({
        messages: messages.map((m) => ({ ...m, content: content(m.content) })) as never,
        temperature: 0,
        max_tokens: 8,
        conversation_id: 'media',
        ...comparable,
      });
    },
    { messages, comparable: COMPARABLE },
  );

const mediaMs = (r: { timings: unknown }) => (r.timings as { media_ms?: number }).media_ms ?? 0;
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

for (const [name, kind] of [
  ['gemma3-vision', 'image'],
  ['qwen25vl-vision', 'image'],
  ['qwen2a-audio', 'audio'],
] as Array<[ProjectorName, 'image' | 'audio']>) {
  test(`${kind}: read once, reused next turn and after a reload without encoding, like a cold engine (${name})`, async ({
    harness,
  }) => {
    const file = (seed: number) => b64(kind === 'image' ? testPng(96, 96, seed) : testWav(1.5, 16000, seed));
    await start(harness, name);
    expect((await harness.evaluate(() => window.engine.info())).input).toContain(kind);
    const messages: Msg[] = [
      { role: 'system', content: 'You describe what you are shown.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { file: file(1), kind, as: 'file' },
        ],
      },
    ];
    const r1 = await ask(harness, messages);
    expect(mediaMs(r1)).toBeGreaterThan(0);
    messages.push(
      { role: 'assistant', content: r1.choices[0]!.message.content! },
      { role: 'user', content: 'Tell me more.' },
    );
    const r2 = await ask(harness, messages);
    expect(r2.timings.cache_source).toBe('memory');
    expect(mediaMs(r2)).toBe(0);
    await harness.evaluate(() => window.engine.cache.flush());

    await harness.reload();
    await start(harness, name);
    // The same bytes sent the other way (data: URL, base64) are the same media: their hash matches.
    const again = messages.map(
      (m): Msg =>
        Array.isArray(m.content)
          ? { ...m, content: m.content.map((p) => ('file' in p ? { ...p, as: 'data' as const } : p)) }
          : m,
    );
    again.push({ role: 'assistant', content: r2.choices[0]!.message.content! }, { role: 'user', content: 'Thanks.' });
    const r3 = await ask(harness, again);
    expect(r3.timings.cache_source).toBe('indexeddb');
    expect(mediaMs(r3)).toBe(0);
    expect(r3.usage.prompt_tokens_details.cached_tokens).toBeGreaterThanOrEqual(r2.usage.prompt_tokens - 3);

    await harness.evaluate(() => window.engine.terminate());
    await start(harness, name, { persistent: false, conversations: false, systemPrompt: false });
    const cold = await ask(harness, again);
    expect(mediaMs(cold)).toBeGreaterThan(0);
    const diff = answerDiff(r3, cold);
    expect(diff.tokens[0]).toEqual(diff.tokens[1]);
    // The GPU engine reads media embeddings in f16 (test/compare.ts).
    const tolerance = harness.backend === 'webgpu' ? GPU_MEDIA_TOLERANCE : MEDIA_LOGPROB_TOLERANCE;
    expect(diff.logprobs).toBeLessThan(tolerance);
    // Another image or clip in its place moves the answer: the comparison above could fail.
    const other = again.map(
      (m, i): Msg =>
        i === 1
          ? {
              ...m,
              content: [
                { type: 'text', text: 'What is this?' },
                { file: file(2), kind, as: 'data' },
              ],
            }
          : m,
    );
    const moved = answerDiff(await ask(harness, other), cold);
    expect(
      moved.logprobs > Math.max(PROMPT_EFFECT, 3 * tolerance) ||
        moved.tokens[0].join('|') !== moved.tokens[1].join('|'),
    ).toBe(true);
  });
}

test('a model without a projector refuses an image with a typed error and answers text afterwards', async ({
  harness,
}) => {
  await openEngine(harness);
  await harness.evaluate(() => window.engine.load('/test-models/qwen2-hello.gguf', { nCtx: 1024 }));
  const err = await harness.evaluate(
    async (png) => {
      try {
        await window.engine.chat.completions.create({
          messages: [
            { role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } }] },
          ],
        });
        return null;
      } catch (e) {
        return { name: (e as Error).name, code: (e as { code?: string }).code };
      }
    },
    b64(testPng(32, 32, 1)),
  );
  expect(err).toEqual({ name: 'InvalidRequestError', code: 'images_not_supported' });
  const r = await harness.evaluate(() =>
    window.engine.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], temperature: 0 }),
  );
  expect(r.choices[0]!.message.content).toBe('Hello, world!');
});
