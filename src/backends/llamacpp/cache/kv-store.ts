// KV state records in IndexedDB (idb-keyval, one object store). A record is a token list plus the chunks of
// llama_state_seq_get_data output that rebuild those tokens' KV cells: chunk k holds cells [start, end). A
// conversation gains one chunk per turn, so a save costs the turn's new tokens, not the whole history.
//
// Memory that cannot roll back (recurrent, hybrid, a sliding window) also keeps a record's checkpoints: the states
// a slot kept at message ends (slots.ts), so that a conversation restored and then edited in an earlier message goes
// back to the end of the message before the edit, not to the start.
//
// With a draft model loaded (speculative decoding), a conversation's record keeps the draft's cells too, in chunks of
// their own over the record's text tokens: a conversation restored after a reload resumes its draft as well.
//
// Keys: 'm:<record key>' → RecordMeta, 'c:<chunk id>' → Blob (a chunk's or a checkpoint's). A record and its blobs
// are written in one transaction, so a save cut short by a reload leaves either the old record or the new one, never
// a half.
import { promisifyRequest, type UseStore } from 'idb-keyval';
import type { CacheStats } from '../../../types.ts';
import { binaryValue } from '../../../core/idb-binary.ts';
import { yieldingStore } from '../../../core/idb-store.ts';
import { hashBytes } from '../../../core/hash.ts';
import { FORMAT_VERSION, namedConversationId } from './identity.ts';

/** A blob of state bytes the record references. */
export interface BlobMeta {
  id: string;
  bytes: number;
  /** hashBytes of the blob's bytes. */
  sum: string;
}

export interface ChunkMeta extends BlobMeta {
  /** First and one-past-last token whose cells this chunk restores (the state may hold more; they are trimmed). */
  start: number;
  end: number;
}

/** The part of a slot's state that cannot be rolled back (Slots.checkpoint), when it held its first `n` tokens. */
export interface CheckpointMeta extends BlobMeta {
  n: number;
}

export interface RecordMeta {
  v: number;
  key: string;
  kind: 'conversation' | 'system';
  /** Model fingerprint, llama.cpp build and KV layout: a record restores only into the same. */
  layout: string;
  tokens: Int32Array;
  chunks: ChunkMeta[];
  /** Ascending by n, each inside the record (0 < n < tokens.length); none for memory that rolls back. */
  checkpoints: CheckpointMeta[];
  /** Conversation records saved beside a draft model: its cells. Absent or null: none. */
  draft?: DraftRecord | null;
  /** Conversation records: hash of the messages the tokens render (including the generated reply). */
  msgHash: string | null;
  msgCount: number;
  bytes: number;
  lastUsed: number;
}

/** A draft model's cells of a conversation (LoadOptions.draft), beside the model's. */
export interface DraftRecord {
  /** The draft's fingerprint, llama.cpp build and KV layout (identity.ts layoutKey): restored only into the same. */
  layout: string;
  /** Its cells in order from the first, over the record's tokens without media placeholders (what the draft reads):
   * as many of them as it had read, which may be fewer than all. */
  chunks: ChunkMeta[];
}

export interface NewChunk {
  chunk: BlobMeta;
  data: Uint8Array;
}

const META = 'm:';
const CHUNK = 'c:';

export class KvStore {
  private index: Map<string, RecordMeta> | null = null;
  private loading: Promise<Map<string, RecordMeta>> | null = null;
  /** What the browser's storage limit made this store do since the last takeNotes(): for the next answer's warnings
   * (saves run after their answer is delivered). */
  private notes: string[] = [];

  constructor(
    private readonly idb: UseStore,
    readonly budgetBytes: number,
  ) {}

  static open(budgetBytes: number, dbName = 'hearth-kv'): KvStore | null {
    if (typeof indexedDB === 'undefined') return null;
    const kv: KvStore = new KvStore(
      yieldingStore(dbName, 'records', () => kv.gone()),
      budgetBytes,
    );
    return kv;
  }

  /** The database was deleted or cleared under this store (another tab, the browser's "clear site data"): it holds
   * nothing now. A save that extended a record finds it gone and saves its conversation whole at the next turn. */
  private gone(): void {
    this.index = new Map();
    this.loading = null;
  }

  /** All records, read once from IndexedDB; records of an older format and chunks nobody references are deleted. */
  records(): Promise<Map<string, RecordMeta>> {
    if (this.index) return Promise.resolve(this.index);
    this.loading ??= this.load().then((m) => (this.index = m));
    return this.loading;
  }

  loadedOrNull(): Map<string, RecordMeta> | null {
    return this.index;
  }

  /** The index; records() must have resolved before. */
  loaded(): Map<string, RecordMeta> {
    if (!this.index) throw new Error('the KV store index is not loaded yet');
    return this.index;
  }

  private async load(): Promise<Map<string, RecordMeta>> {
    const keys = (await this.idb('readonly', (s) => promisifyRequest(s.getAllKeys()))) as string[];
    const metaKeys = keys.filter((k) => typeof k === 'string' && k.startsWith(META));
    const metas = (await this.idb('readonly', (s) =>
      Promise.all(metaKeys.map((k) => promisifyRequest(s.get(k)))),
    )) as unknown[];
    const index = new Map<string, RecordMeta>();
    const stale: string[] = [];
    let bad = 0;
    metaKeys.forEach((k, i) => {
      const m = metas[i] as RecordMeta | undefined;
      if (isMeta(m) && META + m.key === k) return void index.set(m.key, m);
      stale.push(k);
      if ((m as { v?: unknown } | undefined)?.v === FORMAT_VERSION) bad++; // not just an older format
    });
    if (bad) console.warn(`[hearth] dropped ${bad} saved KV record(s) that are not valid`);
    const used = new Set([...index.values()].flatMap((m) => blobs(m).map((c) => CHUNK + c.id)));
    for (const k of keys) if (typeof k === 'string' && k.startsWith(CHUNK) && !used.has(k)) stale.push(k);
    if (stale.length) await this.idb('readwrite', (s) => tx(s, () => stale.forEach((k) => s.delete(k))));
    return index;
  }

  get bytes(): number {
    let n = 0;
    for (const m of this.index?.values() ?? []) n += m.bytes;
    return n;
  }

  /** Blobs of `meta` (its chunks unless told), checked against their checksums; null (and the record deleted) if any is
   * missing or damaged. */
  async read(meta: RecordMeta, which: BlobMeta[] = meta.chunks): Promise<Uint8Array[] | null> {
    const values = (await this.idb('readonly', (s) =>
      Promise.all(which.map((c) => promisifyRequest(s.get(CHUNK + c.id)))),
    )) as unknown[];
    const out: Uint8Array[] = [];
    for (let i = 0; i < which.length; i++) {
      const b = values[i];
      const data = b instanceof Blob ? new Uint8Array(await b.arrayBuffer()) : b instanceof Uint8Array ? b : null;
      const c = which[i]!;
      if (!data || data.length !== c.bytes || hashBytes(data) !== c.sum) {
        await this.remove(meta.key);
        return null;
      }
      out.push(data);
    }
    return out;
  }

  /**
   * Writes `meta` with its new blobs and deletes the blobs it no longer uses, in one transaction. Keeps the
   * budget by evicting least recently used records first; on QuotaExceededError evicts and retries once. Returns
   * false when the record was not stored (too large for the budget, or storage refused it).
   */
  async write(meta: RecordMeta, added: NewChunk[], dropped: string[]): Promise<boolean> {
    const index = await this.records();
    if (meta.bytes > this.budgetBytes) return false;
    const others = this.bytes - (index.get(meta.key)?.bytes ?? 0);
    await this.evict(others + meta.bytes - this.budgetBytes, meta.key);
    const values = await Promise.all(added.map(({ data }) => binaryValue(this.idb, [data])));
    let evicted: RecordMeta[] = [];
    for (let attempt = 0; ; attempt++) {
      try {
        await this.idb('readwrite', (s) =>
          tx(s, () => {
            added.forEach(({ chunk }, i) => s.put(values[i], CHUNK + chunk.id));
            s.put(meta, META + meta.key);
            for (const id of dropped) s.delete(CHUNK + id);
          }),
        );
        index.set(meta.key, meta);
        if (attempt > 0) {
          this.note(
            `the browser's storage was full: ${evicted.length} older saved state(s) (${mb(evicted)}) were ` +
              'deleted to save the last answer',
          );
        }
        return true;
      } catch (err) {
        if ((err as Error)?.name !== 'QuotaExceededError') return false;
        // The browser's quota is below our budget: make room for twice this write and try once more.
        if (attempt === 0) evicted = await this.evict(2 * added.reduce((n, a) => n + a.data.length, 0), meta.key, true);
        if (attempt > 0 || !evicted.length) {
          this.note(
            "the browser's storage is full: the last answer's conversation state was not saved (the next turn reads " +
              'the conversation again)',
          );
          return false;
        }
      }
    }
  }

  /** Records that the record was used now (for LRU eviction). */
  async touch(key: string): Promise<void> {
    const m = this.index?.get(key);
    if (!m) return;
    m.lastUsed = Date.now();
    await this.idb('readwrite', (s) => tx(s, () => s.put(m, META + key))).catch(() => {});
  }

  async remove(key: string): Promise<void> {
    const index = await this.records();
    const m = index.get(key);
    index.delete(key);
    await this.idb('readwrite', (s) =>
      tx(s, () => {
        s.delete(META + key);
        for (const c of m ? blobs(m) : []) s.delete(CHUNK + c.id);
      }),
    ).catch(() => {});
  }

  /** Removes the records of a conversation named by conversation_id, under every layout. */
  async removeConversation(conversationId: string): Promise<void> {
    const index = await this.records();
    for (const key of [...index.keys()]) if (namedConversationId(key) === conversationId) await this.remove(key);
  }

  async clear(): Promise<void> {
    const index = await this.records();
    for (const m of [...index.values()]) await this.remove(m.key);
  }

  /** The notes gathered since the last call (see `notes`), once each. */
  takeNotes(): string[] {
    return this.notes.splice(0);
  }

  private note(text: string) {
    if (!this.notes.includes(text)) this.notes.push(text);
  }

  /**
   * Deletes least recently used records (never `keep`) until `excess` bytes are freed. With `force`, frees at least
   * one record. Returns the records deleted.
   */
  private async evict(excess: number, keep: string, force = false): Promise<RecordMeta[]> {
    const index = this.index!;
    const lru = [...index.values()].filter((m) => m.key !== keep).sort((a, b) => a.lastUsed - b.lastUsed);
    const doomed: string[] = [];
    let freed = 0;
    for (const m of lru) {
      if (freed >= excess && !(force && !doomed.length)) break;
      freed += m.bytes;
      doomed.push(m.key);
    }
    const gone = doomed.map((key) => index.get(key)!);
    for (const key of doomed) await this.remove(key);
    return gone;
  }
}

const mb = (records: RecordMeta[]) => `${(records.reduce((n, m) => n + m.bytes, 0) / 2 ** 20).toFixed(1)} MB`;

/** Runs `fill` on the store and resolves when its transaction commits (rejects if it aborts, e.g. quota). */
function tx(s: IDBObjectStore, fill: () => void): Promise<void> {
  fill();
  return promisifyRequest(s.transaction);
}

/** A stored record checked in every field this code relies on: anything else (damaged, or written by other code) is
 * dropped, and a bad record never disables saving the others. */
function isMeta(m: RecordMeta | undefined): m is RecordMeta {
  if (
    !m ||
    typeof m !== 'object' ||
    m.v !== FORMAT_VERSION ||
    typeof m.key !== 'string' ||
    typeof m.layout !== 'string'
  ) {
    return false;
  }
  if (
    (m.kind !== 'conversation' && m.kind !== 'system') ||
    !(m.tokens instanceof Int32Array) ||
    !Array.isArray(m.chunks)
  ) {
    return false;
  }
  if (!(m.msgHash === null || typeof m.msgHash === 'string') || !count(m.msgCount) || !Number.isFinite(m.lastUsed)) {
    return false;
  }
  // The chunks rebuild cells [0, tokens.length) in order, one after the other; the checkpoints lie inside, ascending.
  let end = 0;
  let bytes = 0;
  for (const c of m.chunks as unknown[]) {
    const chunk = c as ChunkMeta | null;
    if (!isBlob(chunk) || chunk.start !== end || !count(chunk.end) || chunk.end <= chunk.start) return false;
    end = chunk.end;
    bytes += chunk.bytes;
  }
  if (!Array.isArray(m.checkpoints)) return false;
  let last = 0;
  for (const c of m.checkpoints as unknown[]) {
    const cp = c as CheckpointMeta | null;
    if (!isBlob(cp) || !count(cp.n) || cp.n <= last || cp.n >= m.tokens.length) return false;
    last = cp.n;
    bytes += cp.bytes;
  }
  const draft = m.draft;
  if (draft !== undefined && draft !== null) {
    if (typeof draft !== 'object' || typeof draft.layout !== 'string' || !Array.isArray(draft.chunks)) return false;
    let read = 0;
    for (const c of draft.chunks as unknown[]) {
      const chunk = c as ChunkMeta | null;
      if (!isBlob(chunk) || chunk.start !== read || !count(chunk.end) || chunk.end <= chunk.start) return false;
      read = chunk.end;
      bytes += chunk.bytes;
    }
    if (read > textCount(m.tokens)) return false;
  }
  return end === m.tokens.length && m.bytes === bytes;
}

/** Tokens that are no media placeholder (binding/mtmd.ts: negative): what a draft model reads of them. */
function textCount(tokens: Int32Array): number {
  let n = 0;
  for (const t of tokens) if (t >= 0) n++;
  return n;
}

function isBlob(b: BlobMeta | null): b is BlobMeta {
  return !!b && typeof b === 'object' && typeof b.id === 'string' && typeof b.sum === 'string' && count(b.bytes);
}

/** Every blob a record references: its chunks, its checkpoints and its draft's chunks. */
export function blobs(m: RecordMeta): BlobMeta[] {
  return [...m.chunks, ...m.checkpoints, ...(m.draft?.chunks ?? [])];
}

const count = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0;

let chunkCounter = 0;
export function newChunkId(): string {
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}-${++chunkCounter}`;
}

/** A fifth of what the browser lets this origin store (1 GiB where it cannot tell). */
export async function defaultBudget(): Promise<number> {
  try {
    const quota = (await globalThis.navigator?.storage?.estimate?.())?.quota;
    if (quota) return Math.floor(quota / 5);
  } catch {
    // fall through
  }
  return 1024 ** 3;
}

/** What IndexedDB holds, for engine.cache.stats() (after records() has read the index). */
export function storedStats(
  store: KvStore | null,
): Pick<CacheStats, 'persistent' | 'entries' | 'bytes' | 'budgetBytes' | 'conversations' | 'systemPrompts'> {
  const records = [...(store?.loadedOrNull()?.values() ?? [])];
  return {
    persistent: store !== null,
    entries: records.length,
    bytes: store?.bytes ?? 0,
    budgetBytes: store?.budgetBytes ?? 0,
    conversations: records.filter((m) => m.kind === 'conversation').length,
    systemPrompts: records.filter((m) => m.kind === 'system').length,
  };
}
