// Hostile input, bounded and seeded (the same cases on every run; HEARTH_FUZZ_SEED and HEARTH_FUZZ_SCALE ask for
// others and more): mutated GGUF files (header, metadata, tensor table, data, truncation), mutated KV records in
// IndexedDB, random chat requests (JSON shapes, huge strings, control characters, broken UTF-16), random image bytes.
// Each gets a typed error (a HearthError with its code) or an answer; the engine answers the reference request
// exactly as before after every case, and a restored conversation answers as a cold engine would — a mutated
// record is refused, never restored wrong. The counts per outcome are printed ([fuzz] lines).
import 'fake-indexeddb/auto';
import { get, keys, set } from 'idb-keyval';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { readGgufHeader } from '../src/core/gguf/reader.ts';
import { HearthError } from '../src/errors.ts';
import { createNodeEngine, type NodeEngine } from '../src/node.ts';
import type { ChatCompletion } from '../src/types.ts';
import { ensureMultimodal } from './fixtures/projectors.ts';
import { type Random, seeded } from './fixtures/random.ts';
import {
  ask,
  cachedEngine,
  coldEngine,
  expectSameAnswer,
  hello,
  modelPath,
  newDb,
  next,
  rawStore,
  reply,
  NO_CACHE,
  SYSTEM,
  testEngine,
  trackEngines,
} from './helpers.ts';

const SEED = Number(process.env.HEARTH_FUZZ_SEED) || 20261127;
const SCALE = Number(process.env.HEARTH_FUZZ_SCALE) || 1;
/** The same engine and request: the same bits. */
const EXACT = 1e-9;

/** Outcomes by kind: 'answered', or the error's class and code. Anything not a HearthError fails the test. */
class Tally {
  readonly counts = new Map<string, number>();
  add(outcome: string) {
    this.counts.set(outcome, (this.counts.get(outcome) ?? 0) + 1);
  }
  /** Runs a case: its outcome is what `fn` returns when a string, else 'answered'. */
  async run(label: string, fn: () => Promise<unknown>) {
    try {
      const outcome = await fn();
      this.add(typeof outcome === 'string' ? outcome : 'answered');
    } catch (err) {
      if (!(err instanceof HearthError)) throw new Error(`${label}: an untyped error: ${(err as Error)?.stack ?? err}`);
      this.add(`${err.name}(${err.code})`);
    }
  }
  print(kind: string) {
    const total = [...this.counts.values()].reduce((a, b) => a + b, 0);
    console.log(`[fuzz] ${kind}: ${total} cases: ${[...this.counts].map(([k, n]) => `${k} ${n}`).join(', ')}`);
  }
}

const track = trackEngines();

describe('fuzzing (seeded)', () => {
  let engine: NodeEngine;
  let reference: ChatCompletion;
  const good = readFileSync(modelPath('qwen2-hello'));
  const answerHello = () => ask(engine, hello, { max_tokens: 4 });

  /** The engine, after whatever came before, loads the good model and answers exactly as it first did. */
  async function expectHealthy() {
    await engine.load({ path: modelPath('qwen2-hello') }, { nCtx: 1024, nParallel: 2 });
    expectSameAnswer(await answerHello(), reference, EXACT);
  }

  beforeAll(async () => {
    engine = await createNodeEngine({ maxModelBytes: 100e6, cache: { persistent: false } });
    await engine.load({ path: modelPath('qwen2-hello') }, { nCtx: 1024, nParallel: 2 });
    reference = await answerHello();
  });
  afterAll(() => engine.unload());

  it('mutated GGUF files: a typed error or a model that answers, and the engine unharmed', async () => {
    const rng = seeded(SEED);
    const header = await readGgufHeader(async (offset, length) => good.subarray(offset, offset + length), good.length, {
      skipArrays: true,
    });
    const table = tensorTable(good, header.dataOffset, header.tensors.length);
    const mutations: Record<string, (b: Uint8Array) => Uint8Array> = {
      // magic, version, tensor and key counts
      header: (b) => flip(b, rng, 0, 24),
      metadata: (b) => flip(b, rng, 24, table.start),
      // a tensor's dimensions, type or offset set to a boundary value
      'tensor table': (b) => {
        const entry = rng.pick(table.entries);
        const field = rng.pick(['dim', 'type', 'offset', 'ndims'] as const);
        const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
        const wild = rng.pick([0, 1, 2 ** 31 - 1, 2 ** 32 - 1, rng.int(2 ** 32)]);
        if (field === 'ndims') view.setUint32(entry.ndims, rng.pick([0, 5, 255, wild]), true);
        else if (field === 'type') view.setUint32(entry.type, rng.pick([2, 8, 12, 39, 40, 255, wild]), true);
        else if (field === 'dim') {
          view.setBigUint64(entry.dims + 8 * rng.int(entry.count), BigInt(wild) * BigInt(rng.pick([1, 2 ** 20])), true);
        } else view.setBigUint64(entry.offset, BigInt(wild) * BigInt(rng.pick([1, 32])), true);
        return b;
      },
      truncated: (b) => b.subarray(0, 1 + rng.int(b.length - 1)),
      data: (b) => flip(b, rng, header.dataOffset, b.length),
    };
    const cases = 12 * SCALE;
    const dir = mkdtempSync(join(tmpdir(), 'hearth-fuzz-'));
    const file = join(dir, 'mutated.gguf');
    for (const [kind, mutate] of Object.entries(mutations)) {
      const tally = new Tally();
      for (let i = 0; i < cases; i++) {
        // A file, as Node loads models ({ path }; a Blob goes to a browser's worker).
        writeFileSync(file, mutate(Uint8Array.from(good)));
        await tally.run(`${kind} #${i}`, async () => {
          await engine.load({ path: file }, { nCtx: 512, nParallel: 1 });
          await ask(engine, hello, { max_tokens: 4 });
        });
        if (i % 4 === 3) await expectHealthy();
      }
      tally.print(`GGUF ${kind}`);
    }
    rmSync(dir, { recursive: true });
    await expectHealthy();
  });

  it('random chat requests: a typed error or an answer, and the next request unharmed', async () => {
    const rng = seeded(SEED + 1);
    await expectHealthy();
    const tally = new Tally();
    for (let i = 0; i < 150 * SCALE; i++) {
      const request = randomRequest(rng);
      await tally.run(`request #${i}: ${JSON.stringify(request).slice(0, 300)}`, async () => {
        const r = await engine.chat.completions.create(request as never);
        if (Symbol.asyncIterator in (r as object)) for await (const _ of r as AsyncIterable<unknown>);
      });
      if (i % 25 === 24) expectSameAnswer(await answerHello(), reference, EXACT);
    }
    tally.print('chat requests');
    await expectHealthy();
  });

  it('random image bytes: a typed error or an answer', async () => {
    const rng = seeded(SEED + 2);
    const { model, mmproj } = await ensureMultimodal('gemma3-vision');
    const vision = await track(createNodeEngine({ cache: { persistent: false } }));
    await vision.load({ path: model }, { projector: { path: mmproj }, nCtx: 2048 });
    const tally = new Tally();
    const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    for (let i = 0; i < 10 * SCALE; i++) {
      // Noise, or noise behind a real PNG, JPEG or WAV signature (the decoders get further).
      const body = Uint8Array.from({ length: 1 + rng.int(4096) }, () => rng.int(256));
      const head = rng.pick([
        new Uint8Array(),
        png,
        Uint8Array.from([0xff, 0xd8, 0xff, 0xe0]),
        bytes('RIFF\0\0\0\0WAVE'),
      ]);
      const mime = rng.pick(['image/png', 'image/jpeg', 'image/webp', 'application/octet-stream']);
      const url = `data:${mime};base64,${Buffer.from([...head, ...body]).toString('base64')}`;
      await tally.run(`image #${i}`, () =>
        vision.chat.completions.create({
          messages: [
            {
              role: 'user',
              content: [
                { type: 'image_url', image_url: { url } },
                { type: 'text', text: 'What?' },
              ],
            },
          ],
          max_tokens: 2,
        }),
      );
    }
    tally.print('image bytes');
  });

  it("mutated prompt state files: refused with a warning, never restored wrong — the answer is a cold engine's", async () => {
    const rng = seeded(SEED + 4);
    const tally = new Tally();
    const question = [
      { role: 'system' as const, content: SYSTEM },
      { role: 'user' as const, content: 'Name a bread.' },
    ];
    const writer = await track(testEngine('qwen2-hello', { ...NO_CACHE, nCtx: 2048 }));
    const file = new Uint8Array(
      await (await writer.cache.exportPrompt({ messages: question.slice(0, 1) })).arrayBuffer(),
    );
    await writer.unload();
    const cold = await ask(await track(coldEngine('qwen2-hello')), question);
    for (let i = 0; i < 8 * SCALE; i++) {
      const copy = Uint8Array.from(file);
      const bytes = rng.pick([
        () => flip(copy, rng, 0, Math.min(4096, copy.length)), // the header: tokens, sizes, checksum, layout
        () => flip(copy, rng, 0, copy.length),
        () => copy.subarray(0, rng.int(copy.length)),
      ])();
      await tally.run(`prompt state #${i}`, async () => {
        const engine = await track(
          testEngine('qwen2-hello', {
            ...NO_CACHE,
            nCtx: 2048,
            promptState: new Blob([bytes as Uint8Array<ArrayBuffer>]),
          }),
        );
        const warnings = (await engine.info()).model?.warnings ?? [];
        const r = await ask(engine, question);
        expectSameAnswer(r, cold);
        await engine.unload();
        if (r.timings.cache_source === 'prompt-state') return 'answered from the state';
        if (!warnings.some((w) => /prompt state/i.test(w))) throw new Error(`refused without a warning: ${warnings}`);
        return 'refused with a warning, answered cold';
      });
    }
    tally.print('prompt state files');
  });

  it('mutated KV records: refused, never restored wrong — the next turn answers as a cold engine', async () => {
    const rng = seeded(SEED + 3);
    const tally = new Tally();
    const turn1 = [
      { role: 'system' as const, content: SYSTEM },
      { role: 'user' as const, content: 'Name a bread.' },
    ];
    const cold = await track(coldEngine('qwen2-tiny'));
    for (let i = 0; i < 8 * SCALE; i++) {
      const db = newDb();
      const first = await track(cachedEngine('qwen2-tiny', { db }));
      const r1 = await ask(first, turn1, { conversation_id: 'f' });
      const turn2 = next(turn1, reply(r1), 'And a river?');
      const r2 = await ask(first, turn2, { conversation_id: 'f' });
      await first.cache.flush();
      await first.unload();
      const store = rawStore(db);
      const all = (await keys(store)) as string[];
      const key = rng.pick(all);
      const value = await get(key, store);
      await set(key, mutateRecord(value, rng), store);
      const turn3 = next(turn2, reply(r2), 'Which star is brightest?');
      const resumed = await track(cachedEngine('qwen2-tiny', { db }));
      await tally.run(`record #${i} (${key})`, async () => {
        const r3 = await ask(resumed, turn3, { conversation_id: 'f' });
        expectSameAnswer(r3, await ask(cold, turn3));
        return r3.timings.cache_source === 'indexeddb'
          ? 'answered from the part still valid'
          : 'answered, not restored';
      });
      await resumed.unload();
    }
    tally.print('KV records');
  });
});

/** The tensor table: where each entry's fields are (after the metadata, before the data). */
function tensorTable(b: Uint8Array, dataOffset: number, count: number) {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  // The first entry is the first tensor's name; walk back from the data to find the table's start by walking forward
  // from each candidate until `count` entries end where the data's alignment padding begins.
  for (let start = dataOffset - 8; start > 24; start--) {
    const entries = [];
    let at = start;
    let ok = true;
    for (let t = 0; t < count && ok; t++) {
      if (at + 8 > dataOffset) ok = false;
      else {
        const nameLength = Number(view.getBigUint64(at, true));
        if (nameLength < 1 || nameLength > 256) ok = false;
        else {
          const ndims = at + 8 + nameLength;
          const n = ndims + 4 <= dataOffset ? view.getUint32(ndims, true) : 0;
          if (n < 1 || n > 4) ok = false;
          else {
            entries.push({ ndims, dims: ndims + 4, count: n, type: ndims + 4 + 8 * n, offset: ndims + 8 + 8 * n });
            at = ndims + 16 + 8 * n;
          }
        }
      }
    }
    if (ok && dataOffset - at < 64) return { start, entries };
  }
  throw new Error('no tensor table found');
}

function flip(b: Uint8Array, rng: Random, from: number, to: number): Uint8Array {
  for (let k = 1 + rng.int(4); k > 0; k--) b[from + rng.int(to - from)] = rng.int(256);
  return b;
}

const bytes = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0));

/** A stored record or chunk with one thing wrong: a byte, a field, a length. */
function mutateRecord(value: unknown, rng: Random): unknown {
  if (value instanceof Blob || value instanceof Uint8Array) {
    const data = value instanceof Uint8Array ? Uint8Array.from(value) : null;
    if (!data) return rng.pick([new Blob([]), 'not a chunk', null]);
    return rng.int(2) ? flip(data, rng, 0, data.length) : data.subarray(0, rng.int(data.length));
  }
  const meta = { ...(value as Record<string, unknown>) };
  const field = rng.pick(Object.keys(meta));
  const was = meta[field];
  if (was instanceof Int32Array) {
    const tokens = Int32Array.from(was);
    if (rng.int(2)) tokens[rng.int(tokens.length)] = rng.int(1000);
    meta[field] = rng.int(2) ? tokens : tokens.subarray(0, rng.int(tokens.length));
  } else if (Array.isArray(was)) {
    meta[field] = was.map((c: Record<string, unknown>) => ({
      ...c,
      [rng.pick(Object.keys(c))]: rng.pick([-1, 0, 1e9, 'x']),
    }));
  } else meta[field] = rng.pick([null, -1, 0, 1e12, 'x', {}, [], Number.NaN]);
  return meta;
}

const HUGE = 'a'.repeat(200_000);

/** A chat request of a random shape: some well formed, most not. */
function randomRequest(rng: Random): unknown {
  const text = () =>
    rng.pick([
      'Hi',
      '',
      HUGE,
      '\u0000\u0001\u001b[31m\u007f',
      '\ud800 lone high surrogate',
      'lone low \udc00',
      '👋🏽 \u202e reversed',
      String.fromCharCode(...Array.from({ length: 64 }, () => rng.int(0x10000))),
    ]);
  const content = () =>
    rng.pick<unknown>([
      text(),
      null,
      42,
      [{ type: 'text', text: text() }],
      [{ type: 'image_url', image_url: { url: rng.pick(['data:,', 'data:image/png;base64,!!', 'http://x/', '']) } }],
      [{ type: 'input_audio', input_audio: { data: 'AAAA', format: rng.pick(['wav', 'mp3', 'ogg']) } }],
      [{ type: 'nonsense' }],
      { text: 'an object' },
    ]);
  const message = () =>
    rng.pick<unknown>([
      { role: rng.pick(['user', 'system', 'assistant', 'tool', 'developer', 'robot', '']), content: content() },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: rng.pick(['{}', '{', 'null']) } }],
      },
      { role: 'tool', tool_call_id: rng.pick(['c', '', 7]), content: content() },
      { content: 'no role' },
      null,
      'a string',
    ]);
  // Half the requests are well formed but for their text; the rest are any shape.
  const wellFormed = rng.int(2) === 0;
  const messages = wellFormed
    ? [
        { role: 'system', content: text() },
        { role: 'user', content: text() },
      ].slice(rng.int(2))
    : rng.pick<unknown>([Array.from({ length: 1 + rng.int(4) }, message), [], 'not a list', undefined]);
  const request: Record<string, unknown> = {
    messages,
    max_tokens: wellFormed ? 1 + rng.int(4) : rng.pick([1, 4, 0, -1, 1e9, 'x', null]),
  };
  if (wellFormed) return request;
  const extras: Array<[string, unknown[]]> = [
    ['temperature', [0, 0.7, -1, 3, 'hot', Number.NaN]],
    ['top_p', [0.5, 0, 2]],
    ['stream', [true, false, 'yes']],
    ['stop', [['\n'], 'x', [1, 2], Array.from({ length: 20 }, (_, i) => `s${i}`)]],
    ['logprobs', [true, 1]],
    ['top_logprobs', [5, 21, -1]],
    ['seed', [1, -5, 2 ** 70, 'x']],
    ['n', [1, 2]],
    [
      'response_format',
      [{ type: 'json_object' }, { type: 'json_schema', json_schema: { schema: { type: 'nope' } } }, 'json'],
    ],
    ['tools', [[{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }], [{}], 'tools']],
    ['tool_choice', ['auto', 'required', { type: 'function', function: { name: 'missing' } }, 7]],
    ['conversation_id', ['c', '', 5, HUGE]],
    ['frequency_penalty', [0, 2.5, -3]],
    ['unknown_field', [1]],
  ];
  for (const [name, values] of extras) if (rng.int(3) === 0) request[name] = rng.pick(values);
  return request;
}
