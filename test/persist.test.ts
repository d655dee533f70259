// KV state in IndexedDB (fake-indexeddb in Node): a new engine on the same database — what a page reload gives —
// resumes a conversation or a system prompt without decoding it again, and bad records are never used.
import 'fake-indexeddb/auto';
import { del, get, keys, set, type UseStore } from 'idb-keyval';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FORMAT_VERSION, namedConversationId } from '../src/backends/llamacpp/cache/identity.ts';
import type { RecordMeta } from '../src/backends/llamacpp/cache/kv-store.ts';
import type { ChatMessage } from '../src/types.ts';
import {
  inspect,
  ask,
  cachedEngine,
  coldEngine,
  expectPromptMatters,
  expectSameAnswer,
  modelPath,
  newDb,
  next,
  promptTokens,
  rawStore,
  reply,
  SYSTEM,
  systemPrefixLength,
  trackEngines,
} from './helpers.ts';

const track = trackEngines();

const turn1: ChatMessage[] = [
  { role: 'system', content: SYSTEM },
  { role: 'user', content: 'Name a bread.' },
];

/** Two turns on a fresh engine over `db`, saved; returns the messages of the third turn. */
async function chatTwoTurns(
  db: string,
  extra: { conversation_id?: string } = {},
  model: 'qwen2-tiny' | 'qwen2-hello' = 'qwen2-tiny',
) {
  const engine = await track(cachedEngine(model, { db }));
  const r1 = await ask(engine, turn1, extra);
  const turn2 = next(turn1, reply(r1), 'And a river?');
  const r2 = await ask(engine, turn2, extra);
  await engine.cache.flush();
  return { engine, turn3: next(turn2, reply(r2), 'Which star is brightest?'), r2 };
}

async function metas(db: string): Promise<RecordMeta[]> {
  const store = rawStore(db);
  const all = (await keys(store)) as string[];
  return Promise.all(all.filter((k) => k.startsWith('m:')).map((k) => get(k, store)));
}

describe('resume from IndexedDB', () => {
  it.each(['qwen2-tiny', 'qwen2-hello', 'llama3-hello'] as const)(
    '%s answers another question with other log-probabilities (else the comparisons here could not fail)',
    async (model) => {
      await expectPromptMatters(await track(coldEngine(model)));
    },
  );

  it.each([
    ['by conversation_id', { conversation_id: 'chat-1' }],
    ['by message history', {}],
  ])('restores a conversation %s with exactly the logits of the sequence it was saved from', async (_, extra) => {
    const db = newDb();
    const { engine, turn3 } = await chatTwoTurns(db, extra);
    const reloaded = await track(cachedEngine('qwen2-tiny', { db }));
    const restored = await inspect(reloaded).promptLogits({ messages: turn3, ...extra });
    const inMemory = await inspect(engine).promptLogits({ messages: turn3, ...extra });
    expect(inMemory.source).toBe('memory');
    expect(restored.source).toBe('indexeddb');
    expect(restored.cached).toBe(inMemory.cached);
    expect(restored.cached).toBeGreaterThan(0.9 * promptTokens(engine, turn3).length);
    // A restored state is bit-exact: same cells, same positions, same numbers.
    expect(restored.logits).toEqual(inMemory.logits);
  });

  it('saves each turn as a chunk of its new tokens only, and answers after a reload like a cold engine', async () => {
    const db = newDb();
    const { turn3, engine } = await chatTwoTurns(db, { conversation_id: 'c' }, 'qwen2-hello');
    const [meta] = (await metas(db)).filter((m) => m.kind === 'conversation');
    // Two conversation turns and the system prompt, all counted with their bytes.
    const { saves } = await engine.cache.stats();
    expect(saves.count).toBe(3);
    expect(saves.bytes).toBe(meta!.bytes + (await metas(db)).filter((m) => m.kind === 'system')[0]!.bytes);
    expect(meta!.chunks).toHaveLength(2);
    const [c1, c2] = meta!.chunks;
    expect(c2!.start).toBe(c1!.end);
    expect(c2!.end).toBe(meta!.tokens.length);
    // Bytes per token are the same for both chunks: the second turn wrote its own cells, not the history again.
    const perToken = (c: typeof c1) => c!.bytes / (c!.end - c!.start);
    expect(perToken(c2) / perToken(c1)).toBeGreaterThan(0.9);
    expect(perToken(c2) / perToken(c1)).toBeLessThan(1.1);
    expect(c2!.bytes).toBeLessThan(c1!.bytes / 5);

    const reloaded = await track(cachedEngine('qwen2-hello', { db }));
    const cold = await track(coldEngine('qwen2-hello'));
    const r = await ask(reloaded, turn3, { conversation_id: 'c' });
    expect(r.timings.cache_source).toBe('indexeddb');
    expect(r.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(0.9 * r.usage.prompt_tokens);
    expectSameAnswer(r, await ask(cold, turn3));
    expect((await reloaded.cache.stats()).hits.indexeddb).toBe(1);
  });

  it('saves a turn larger than cache.chunkBytes in pieces of about that size, and restores them as one conversation', async () => {
    // A big model's long conversation in miniature: qwen2-hello's cache takes ~2 KiB a token; pieces of 40 KB.
    const db = newDb();
    const opts = { db, chunkBytes: 40_000 };
    const engine = await track(cachedEngine('qwen2-hello', opts));
    const turn2 = next(turn1, reply(await ask(engine, turn1, { conversation_id: 'long' })), 'And a river?');
    await engine.cache.flush();
    const [meta] = (await metas(db)).filter((m) => m.kind === 'conversation');
    expect(meta!.chunks.length).toBeGreaterThan(3);
    meta!.chunks.forEach((c, i) => {
      expect(c.start).toBe(i ? meta!.chunks[i - 1]!.end : 0);
      expect(c.bytes).toBeLessThan(40_000 * 1.1);
    });
    expect(meta!.chunks.at(-1)!.end).toBe(meta!.tokens.length);
    const reloaded = await track(cachedEngine('qwen2-hello', opts));
    const r = await ask(reloaded, turn2, { conversation_id: 'long' });
    expect(r.timings.cache_source).toBe('indexeddb');
    expect(r.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(0.9 * r.usage.prompt_tokens);
    expectSameAnswer(r, await ask(await track(coldEngine('qwen2-hello')), turn2));
  });

  it('restores a saved system prompt for a new conversation after a reload', async () => {
    const db = newDb();
    const first = await track(cachedEngine('qwen2-hello', { db }));
    await ask(first, turn1);
    await first.cache.flush();
    const reloaded = await track(cachedEngine('qwen2-hello', { db }));
    const other: ChatMessage[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Something else entirely.' },
    ];
    const progress: string[] = [];
    const r = await reloaded.chat.completions.create({
      messages: other,
      temperature: 0,
      max_tokens: 8,
      onProgress: (p) => progress.push(p.phase),
    });
    expect(r.timings.cache_source).toBe('indexeddb');
    expect(r.usage.prompt_tokens_details.cached_tokens).toBe(systemPrefixLength(reloaded, other));
    expect(progress).toContain('restore');
    expect(progress.at(-1)).toBe('prefill');
    expect(reply(r)).toBe('Hello, world!');
  });

  it('keeps an unrelated conversation in memory and on disk when another one shares its system prompt', async () => {
    const db = newDb();
    const engine = await track(cachedEngine('qwen2-tiny', { db }));
    const a1 = await ask(engine, turn1);
    const b: ChatMessage[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'A different question.' },
    ];
    await ask(engine, b);
    await engine.cache.flush();
    expect((await metas(db)).filter((m) => m.kind === 'conversation')).toHaveLength(2);
    const reloaded = await track(cachedEngine('qwen2-tiny', { db }));
    const a2 = await ask(reloaded, next(turn1, reply(a1), 'More?'));
    expect(a2.timings.cache_source).toBe('indexeddb');
    expect(a2.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(a1.usage.prompt_tokens);
  });
});

describe('a sliding-window model (gemma3-tiny) after a reload', () => {
  // A state read back holds only the window's last cells in the sliding-window layers: cutting it below its end gave
  // answers 0.02-0.07 off a cold engine's. The next turn here parts from the saved one inside the reply (the random
  // model's answer renders back in other tokens), so the record must be restored to the prompt's end, not cut.
  it('resumes the next turn from the saved prompt and answers like a cold engine', async () => {
    const db = newDb();
    const first = await track(cachedEngine('gemma3-tiny', { db, minTokens: 16 }));
    const r1 = await ask(first, turn1, { conversation_id: 'swa' });
    await first.cache.flush();
    await first.unload();
    const turn2 = next(turn1, reply(r1), 'And a river?');
    const second = await track(cachedEngine('gemma3-tiny', { db, minTokens: 16 }));
    const r2 = await ask(second, turn2, { conversation_id: 'swa' });
    expect(r2.timings.cache_source).toBe('indexeddb');
    expect(r2.usage.prompt_tokens_details.cached_tokens).toBe(r1.usage.prompt_tokens - 1);
    expectSameAnswer(r2, await ask(await track(coldEngine('gemma3-tiny')), turn2));
  });
});

describe('a record that does not match is deleted and the prompt recomputed', () => {
  async function expectRecomputed(
    db: string,
    turn3: ChatMessage[],
    model: 'qwen2-tiny' | 'qwen2-hello' = 'qwen2-tiny',
  ) {
    const reloaded = await track(cachedEngine(model, { db }));
    const cold = await track(coldEngine(model));
    const r = await ask(reloaded, turn3, { conversation_id: 'x' });
    // At most the (intact) system prompt record is used; the conversation is decoded again.
    expect(r.usage.prompt_tokens_details.cached_tokens).toBeLessThanOrEqual(systemPrefixLength(reloaded, turn3));
    expectSameAnswer(r, await ask(cold, turn3));
    return reloaded;
  }

  it('a damaged chunk (checksum)', async () => {
    const db = newDb();
    const { turn3 } = await chatTwoTurns(db, { conversation_id: 'x' });
    const store = rawStore(db);
    const [meta] = (await metas(db)).filter((m) => m.kind === 'conversation');
    const key = `c:${meta!.chunks[1]!.id}`;
    const bytes = new Uint8Array(await ((await get(key, store)) as Blob).arrayBuffer());
    bytes[bytes.length >> 1]! ^= 0xff;
    await set(key, new Blob([bytes]), store);
    const engine = await expectRecomputed(db, turn3);
    await engine.cache.flush();
    // The damaged record is gone; the conversation was saved again from scratch.
    const [again] = (await metas(db)).filter((m) => m.kind === 'conversation');
    expect(again!.chunks.map((c) => c.id)).not.toContain(meta!.chunks[1]!.id);
    expect(again!.chunks[0]!.start).toBe(0);
  });

  it('a record written for another model', async () => {
    const db = newDb();
    const { turn3 } = await chatTwoTurns(db, { conversation_id: 'x' }, 'qwen2-hello');
    // qwen2-tiny has the same tokenizer, template and shapes as qwen2-hello; only the weights differ.
    await expectRecomputed(db, turn3, 'qwen2-tiny');
  });

  it('a record of an older format version', async () => {
    const db = newDb();
    const { turn3 } = await chatTwoTurns(db, { conversation_id: 'x' });
    const store = rawStore(db);
    const old = await metas(db);
    for (const m of old) await set(`m:${m.key}`, { ...m, v: 0 }, store);
    const engine = await expectRecomputed(db, turn3);
    await engine.cache.flush();
    // The old records and their chunks are gone; what is there now was written again.
    const oldChunks = old.flatMap((m) => m.chunks.map((c) => `c:${c.id}`));
    const now = (await keys(store)) as string[];
    expect(now.filter((k) => oldChunks.includes(k))).toEqual([]);
    expect((await metas(db)).every((m) => m.v === FORMAT_VERSION)).toBe(true);
  });

  it('records that are not valid: dropped with a warning, and saving and restoring go on for the others', async () => {
    const db = newDb();
    const { turn3 } = await chatTwoTurns(db, { conversation_id: 'x' });
    const [good] = (await metas(db)).filter((m) => m.kind === 'conversation');
    const store = rawStore(db);
    const bad: Array<Partial<RecordMeta> & Record<string, unknown>> = [
      { chunks: [null] as never }, // once disabled persistence for the whole origin
      { chunks: good!.chunks.slice(1) }, // a gap: the first cells are missing
      { bytes: good!.bytes + 1 },
      { tokens: Array.from(good!.tokens) as never },
      { kind: 'other' as never },
      // A checkpoint past the record's tokens, and checkpoints out of order.
      { checkpoints: [{ id: 'x', n: good!.tokens.length, bytes: 0, sum: '' }] },
      {
        checkpoints: [
          { id: 'x', n: 5, bytes: 0, sum: '' },
          { id: 'y', n: 3, bytes: 0, sum: '' },
        ],
      },
      // A draft model's cells: not an object, past the record's tokens, with a gap.
      { draft: 'x' as never },
      { draft: { layout: 'x', chunks: [{ id: 'x', start: 0, end: good!.tokens.length + 1, bytes: 0, sum: '' }] } },
      { draft: { layout: 'x', chunks: [{ id: 'x', start: 1, end: 2, bytes: 0, sum: '' }] } },
    ];
    for (const [i, change] of bad.entries()) await set(`m:bad-${i}`, { ...good, key: `bad-${i}`, ...change }, store);
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const reloaded = await track(cachedEngine('qwen2-tiny', { db }));
    const restored = await ask(reloaded, turn3, { conversation_id: 'x' });
    expect(restored.timings.cache_source).toBe('indexeddb');
    expect(warn.mock.calls.flat().join(' ')).toMatch(/dropped 10 saved KV record/);
    // A new conversation is saved as before.
    await ask(
      reloaded,
      [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'A new one.' },
      ],
      { conversation_id: 'y' },
    );
    await reloaded.cache.flush();
    const kept = (await metas(db)).map((m) => m.key);
    expect(kept.filter((k) => k.endsWith(':y'))).toHaveLength(1);
    expect(kept.filter((k) => k.startsWith('bad-'))).toEqual([]);
    warn.mockRestore();
  });

  it('a model changed only in its middle (same size, same first and last MiB) is another model: no state is shared', async () => {
    const db = newDb();
    const { turn3 } = await chatTwoTurns(db, { conversation_id: 'x' });
    // The weights in the middle of the file change by their last bit: a fixed and re-uploaded model.
    const changed = join(mkdtempSync(join(tmpdir(), 'hearth-identity-')), 'qwen2-tiny-fixed.gguf');
    const bytes = readFileSync(modelPath('qwen2-tiny'));
    bytes[(bytes.length >> 1) & ~3]! ^= 1;
    writeFileSync(changed, bytes);
    const other = await track(cachedEngine('qwen2-tiny', { db, path: changed }));
    expect((await ask(other, turn3, { conversation_id: 'x' })).timings.cache_source).not.toBe('indexeddb');
    await other.cache.flush();
    // Neither model's load deleted the other's state: the original resumes from IndexedDB.
    const original = await track(cachedEngine('qwen2-tiny', { db }));
    expect((await ask(original, turn3, { conversation_id: 'x' })).timings.cache_source).toBe('indexeddb');
    rmSync(dirname(changed), { recursive: true, force: true });
  });

  it('a missing chunk (a save that never completed)', async () => {
    const db = newDb();
    const { turn3 } = await chatTwoTurns(db, { conversation_id: 'x' });
    const [meta] = (await metas(db)).filter((m) => m.kind === 'conversation');
    await del(`c:${meta!.chunks[0]!.id}`, rawStore(db));
    await expectRecomputed(db, turn3);
  });
});

describe('storage limits', () => {
  afterEach(() => vi.restoreAllMocks());

  it('still answers when storage refuses every write (QuotaExceededError, simulated)', async () => {
    const db = newDb();
    const failing =
      (store: UseStore): UseStore =>
      (mode, cb) =>
        mode === 'readwrite' ? Promise.reject(new DOMException('quota', 'QuotaExceededError')) : store(mode, cb);
    const engine = await track(cachedEngine('qwen2-hello', { db, wrap: failing }));
    const r1 = await ask(engine, turn1);
    expect(r1.warnings).toBeUndefined();
    await engine.cache.flush(); // the first answer's save has failed
    const r2 = await ask(engine, next(turn1, reply(r1), 'More?'));
    await engine.cache.flush();
    expect(reply(r2)).toBe('Hello, world!');
    expect(r2.timings.cache_source).toBe('memory'); // the in-memory cache still works
    // Saves run after their answer: the next answer says what became of them.
    expect(r2.warnings).toEqual([expect.stringMatching(/^the browser's storage is full: .* was not saved/)]);
    expect(await metas(db)).toHaveLength(0);
    expect((await engine.cache.stats()).entries).toBe(0);
  });

  it('storage full while saving (QuotaExceededError once, simulated): the oldest conversation is deleted to save the new one, and the next answer says so', async () => {
    const db = newDb();
    let full = false;
    // The first transaction that writes a conversation record after `full` is set fails as a full disk does.
    const quota =
      (store: UseStore): UseStore =>
      (mode, cb) =>
        store(mode, (s) => {
          const { result, conversation } = watchWrites(s, cb);
          if (!(full && conversation && mode === 'readwrite')) return result;
          full = false;
          s.transaction.abort();
          Promise.resolve(result).catch(() => {});
          return Promise.reject(new DOMException('the quota is reached', 'QuotaExceededError'));
        });
    const engine = await track(cachedEngine('qwen2-hello', { db, wrap: quota }));
    for (const id of ['a', 'b', 'c']) {
      await ask(engine, turn1, { conversation_id: id });
      await engine.cache.flush();
    }
    const before = (await metas(db)).length; // three conversations and their system prompt's state
    full = true;
    const r = await ask(engine, turn1, { conversation_id: 'd' });
    expect(r.warnings).toBeUndefined();
    await engine.cache.flush();
    // By the id the key ends with: the layout's hash before it is hex, and `includes(':a')` matched it whenever that
    // hash began with an a (a new llama.cpp patch set made it so, and CI kept failing here).
    const saved = (await metas(db)).filter((m) => m.kind === 'conversation').map((m) => namedConversationId(m.key));
    expect(saved).toContain('d'); // the new one, saved on the second try
    expect(saved).not.toContain('a'); // the oldest, deleted for it (room for two such writes)
    const deleted = before + 1 - (await metas(db)).length;
    const after = await ask(engine, next(turn1, reply(r), 'More?'), { conversation_id: 'd' });
    expect(after.warnings).toEqual([
      expect.stringMatching(
        new RegExp(`^the browser's storage was full: ${deleted} older saved state\\(s\\) \\(.* MB\\) were deleted`),
      ),
    ]);
    expect((await ask(engine, turn1, { conversation_id: 'e' })).warnings).toBeUndefined(); // said once
  });

  /** Runs a transaction's callback on `s`, telling whether it wrote a conversation record (its puts are synchronous). */
  function watchWrites<T>(s: IDBObjectStore, cb: (s: IDBObjectStore) => T): { result: T; conversation: boolean } {
    let conversation = false;
    const spy = new Proxy(s, {
      get(target, prop) {
        if (prop === 'put') {
          return (value: unknown, key: IDBValidKey) => {
            if (String(key).startsWith('m:conversation')) conversation = true;
            return target.put(value, key);
          };
        }
        const v = Reflect.get(target, prop);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const result = cb(spy);
    return { result, conversation };
  }

  /**
   * A slow disk: writes wait until open() is called. `failFirstConversation` aborts the first transaction that
   * writes a conversation record (a refused write, simulated).
   */
  function slowDisk(failFirstConversation: boolean) {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let failures = failFirstConversation ? 1 : 0;
    const wrap =
      (store: UseStore): UseStore =>
      (mode, cb) => {
        if (mode !== 'readwrite') return store(mode, cb);
        return gate.then(() =>
          store(mode, (s) => {
            const { result, conversation } = watchWrites(s, cb);
            if (conversation && failures-- > 0) s.transaction.abort();
            return result;
          }),
        );
      };
    return { wrap, open: () => open() };
  }

  it.each([
    ["saves queued behind a slow disk still write only each turn's new cells", false],
    ['a queued save that builds on a failed one is dropped, and the next turn saves everything', true],
  ])('%s (simulated)', async (_, fail) => {
    const db = newDb();
    const disk = slowDisk(fail);
    const engine = await track(cachedEngine('qwen2-tiny', { db, wrap: disk.wrap }));
    const r1 = await ask(engine, turn1, { conversation_id: 'q' });
    const turn2 = next(turn1, reply(r1), 'And a river?');
    const r2 = await ask(engine, turn2, { conversation_id: 'q' });
    disk.open(); // both turns' saves were queued before anything was written
    await engine.cache.flush();
    let convs = (await metas(db)).filter((m) => m.kind === 'conversation');
    let turn3 = next(turn2, reply(r2), 'Which star?');
    if (fail) {
      expect(convs).toHaveLength(0); // turn 2's chunk alone would be useless: not written
      const r3 = await ask(engine, turn3, { conversation_id: 'q' });
      await engine.cache.flush();
      convs = (await metas(db)).filter((m) => m.kind === 'conversation');
      expect(convs[0]!.chunks.map((c) => c.start)).toEqual([0]);
      turn3 = next(turn3, reply(r3), 'And a map?');
    } else {
      expect(convs[0]!.chunks).toHaveLength(2);
      expect(convs[0]!.chunks[1]!.bytes).toBeLessThan(convs[0]!.chunks[0]!.bytes / 5);
    }
    const reloaded = await track(cachedEngine('qwen2-tiny', { db }));
    const restored = await inspect(reloaded).promptLogits({ messages: turn3, conversation_id: 'q' });
    const inMemory = await inspect(engine).promptLogits({ messages: turn3, conversation_id: 'q' });
    expect(restored.source).toBe('indexeddb');
    expect(restored.cached).toBe(inMemory.cached);
    expect(restored.logits).toEqual(inMemory.logits);
  });

  it('evicts the least recently used records to stay within budgetBytes', async () => {
    const db = newDb();
    const probe = await track(cachedEngine('qwen2-hello', { db: newDb() }));
    await ask(probe, turn1);
    await probe.cache.flush();
    const one = (await probe.cache.stats()).bytes;
    // Room for about three conversations' records (each also has the shared system prompt record).
    const budgetBytes = Math.floor(one * 2.5);
    const engine = await track(cachedEngine('qwen2-hello', { db, budgetBytes }));
    for (let i = 0; i < 5; i++) {
      await ask(
        engine,
        [
          { role: 'system', content: SYSTEM },
          { role: 'user', content: `Conversation number ${i}.` },
        ],
        { conversation_id: `c${i}` },
      );
      await engine.cache.flush();
      expect((await engine.cache.stats()).bytes).toBeLessThanOrEqual(budgetBytes);
    }
    const kept = (await metas(db)).map((m) => m.key);
    expect(kept.filter((k) => k.endsWith(':c4'))).toHaveLength(1);
    expect(kept.filter((k) => k.endsWith(':c0'))).toEqual([]);
  });

  it('clears one conversation, or everything', async () => {
    const db = newDb();
    const engine = await track(cachedEngine('qwen2-hello', { db }));
    const a1 = await ask(engine, turn1, { conversation_id: 'a' });
    await ask(
      engine,
      [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'Other.' },
      ],
      { conversation_id: 'b' },
    );
    await engine.cache.flush();
    expect((await engine.cache.stats()).conversations).toBe(2);
    await engine.cache.clear({ conversation_id: 'a' });
    expect((await metas(db)).map((m) => m.key).filter((k) => k.endsWith(':a'))).toEqual([]);
    expect((await engine.cache.stats()).conversations).toBe(1);
    const turn2 = next(turn1, 'Hello, world!', 'More?');
    const again = await ask(engine, turn2, { conversation_id: 'a' });
    // What conversation b shares with it (the system prompt) is reused, nothing of a's own turn.
    expect(again.usage.prompt_tokens_details.cached_tokens).toBeLessThan(a1.usage.prompt_tokens - 3);
    await engine.cache.clear();
    await engine.cache.flush();
    expect(await metas(db)).toHaveLength(0);
  });

  it('keeps nothing in IndexedDB with cache.persistent = false', async () => {
    const db = newDb();
    const engine = await track(cachedEngine('qwen2-hello', { db, persistent: false }));
    const r1 = await ask(engine, turn1, { conversation_id: 'p' });
    const r2 = await ask(engine, next(turn1, reply(r1), 'More?'), { conversation_id: 'p' });
    await engine.cache.flush();
    expect(r2.timings.cache_source).toBe('memory'); // the cache in memory still works
    expect(await metas(db)).toHaveLength(0);
    const stats = await engine.cache.stats();
    expect(stats).toMatchObject({ persistent: false, entries: 0, saves: { count: 0 } });
    expect((await engine.info()).capabilities.persistentKv).toBe(false);
  });
});

describe('templates that render a changing value', () => {
  afterEach(() => vi.useRealTimers());

  it("Llama 3 writes today's date into the system header: a new day still answers correctly", async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const db = newDb();
    vi.setSystemTime(new Date('2026-11-22T12:00:00Z'));
    const engine = await track(cachedEngine('llama3-hello', { db, minTokens: 8 }));
    const r1 = await ask(engine, turn1);
    await engine.cache.flush();
    vi.setSystemTime(new Date('2026-11-23T12:00:00Z'));
    const turn2 = next(turn1, reply(r1), 'And tomorrow?');
    const reloaded = await track(cachedEngine('llama3-hello', { db, minTokens: 8 }));
    const r2 = await ask(reloaded, turn2);
    const cold = await track(coldEngine('llama3-hello'));
    expectSameAnswer(r2, await ask(cold, turn2));
    // Only the tokens before the date were reusable; the rest was decoded again.
    const cached = r2.usage.prompt_tokens_details.cached_tokens;
    expect(cached).toBeGreaterThan(8);
    expect(cached).toBeLessThan(40);
  });
});

describe('aborts', () => {
  // Found by the soak (e2e/soak.spec.ts): a request aborted while its saved state was being read entered the running
  // set without a sampler, and the next decode step failed every running request with a TypeError.
  it('a request aborted while its saved conversation is read ends alone: the one running beside it finishes', async () => {
    const db = newDb();
    const first = await track(cachedEngine('qwen2-tiny', { db }));
    const r1 = await ask(first, turn1, { conversation_id: 'x' });
    await first.cache.flush();
    await first.unload();
    const engine = await track(cachedEngine('qwen2-tiny', { db }));
    const running = await engine.chat.completions.create({
      messages: [{ role: 'user', content: 'Tell me a long story.' }],
      temperature: 0,
      max_tokens: 64,
      stream: true,
    });
    const chunks: string[] = [];
    const reading = (async () => {
      for await (const c of running) chunks.push(c.choices[0]?.finish_reason ?? '');
    })();
    while (!chunks.length) await new Promise((resolve) => setTimeout(resolve, 5));
    const controller = new AbortController();
    const aborted = engine.chat.completions.create({
      messages: next(turn1, reply(r1), 'And a river?'),
      conversation_id: 'x',
      temperature: 0,
      max_tokens: 8,
      signal: controller.signal,
      onProgress: (p) => {
        if (p.phase === 'restore') controller.abort();
      },
    });
    await expect(aborted).rejects.toMatchObject({ name: 'AbortError' });
    await reading;
    expect(chunks.at(-1)).toBe('length'); // all 64 tokens
  });
});
