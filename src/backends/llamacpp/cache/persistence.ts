// The KV cache's side in IndexedDB: which saved conversation a request can resume and restoring it into a slot,
// saved system prompt states, and saving. After each turn a slot's new cells are exported at once (a copy, a few ms,
// before the next request changes the slot) and written in the background, one queue per record.
import type { CacheStats, ChatMessage, Progress, Tool } from '../../../types.ts';
import { now } from '../../../core/clock.ts';
import { hashBytes } from '../../../core/hash.ts';
import { conversationKey, FORMAT_VERSION, isNamedConversation, namedConversationId } from './identity.ts';
import { exportCells } from './kv-io.ts';
import { commonPrefix, hashMessages } from './prefix.ts';
import { textOnly } from '../binding/mtmd.ts';
import { SaveQueue } from './save-queue.ts';
import type { Slot, Slots } from './slots.ts';
import {
  blobs,
  type CheckpointMeta,
  type ChunkMeta,
  type DraftRecord,
  type KvStore,
  newChunkId,
  type NewChunk,
  type RecordMeta,
  storedStats,
} from './kv-store.ts';
import type { SystemState } from './system-states.ts';

/** What a request offers for matching a saved conversation. */
export interface RecordQuery {
  conversationId: string | undefined;
  messages: ChatMessage[];
  tools: Tool[] | undefined;
  tokens: Int32Array;
}

export interface FoundRecord {
  meta: RecordMeta;
  /** Prompt tokens the record can supply. */
  lcp: number;
  /** Found by conversation_id or message hash: it continues that conversation (else it only shares tokens). */
  byHash: boolean;
}

export class Persistence {
  private readonly saves = new SaveQueue();
  /** Conversation records as the saves queued so far will leave them (null: start the record over). */
  private readonly planned = new Map<string, RecordMeta | null>();
  private broken = false;

  constructor(
    private readonly store: KvStore | null,
    private readonly layout: string,
    private readonly slots: Slots,
    private readonly config: { minTokens: number; chunkBytes: number },
  ) {}

  /** Whether states are saved: a store was given (cache.persistent) and IndexedDB works. */
  get enabled(): boolean {
    return this.store !== null && !this.broken;
  }

  /** Reads the index of saved records (once), so that saving after a turn never waits for IndexedDB. */
  async init(): Promise<void> {
    if (!this.store) return;
    try {
      await this.store.records();
    } catch (err) {
      // Private browsing modes and blocked storage: chat works, only without persistence.
      console.warn(`[hearth] IndexedDB is not usable (${(err as Error).message}); the KV cache stays in memory`);
      this.broken = true;
    }
  }

  /** The saved conversation that shares the longest prefix with this request: by id, by message hash, by tokens. */
  async findConversation(req: RecordQuery, usable: (n: number) => number): Promise<FoundRecord | null> {
    if (!this.enabled) return null;
    const store = this.store!;
    const records = await store.records();
    // Written by another model, llama.cpp build or KV layout: never restored, but kept (that model may come back;
    // the budget's LRU eviction removes what is no longer used).
    const check = (meta: RecordMeta | undefined) =>
      !!meta && meta.kind === 'conversation' && meta.layout === this.layout && meta.tokens.length < this.slots.ctx.nCtx; // else kept for a larger context
    const reuse = (meta: RecordMeta) =>
      restorable(meta, usable(commonPrefix(meta.tokens, req.tokens)), this.slots.canCutRestored);
    if (req.conversationId !== undefined) {
      const meta = records.get(conversationKey(req.conversationId, this.layout));
      if (!check(meta)) return null;
      return { meta: meta!, lcp: reuse(meta!), byHash: true };
    }
    let best: FoundRecord | null = null;
    for (const meta of [...records.values()]) {
      if (meta.kind !== 'conversation' || isNamedConversation(meta.key) || meta.msgCount > req.messages.length) {
        continue;
      }
      if (this.slots.all.some((s) => s.key === meta.key)) continue; // already in memory
      const lcp = reuse(meta);
      const byHash = meta.msgHash === hashMessages(req.messages.slice(0, meta.msgCount), req.tools);
      if (!byHash && lcp < this.config.minTokens) continue;
      if (best && ((best.byHash && !byHash) || best.lcp >= lcp)) continue;
      if (check(meta)) best = { meta, lcp, byHash };
    }
    return best;
  }

  /**
   * Rebuilds a saved conversation's cells in `slot`, at least its first `n` tokens (findConversation's lcp): for
   * memory that cannot roll back, the chunks up to `n`, and the record's checkpoints up to `n`, which trimming the
   * slot to `n` then goes back to (restorable). False (and the record deleted) when it is damaged or refused.
   */
  async restoreConversation(
    slot: Slot,
    meta: RecordMeta,
    n: number,
    onProgress?: (p: Progress) => void,
  ): Promise<boolean> {
    const store = this.store!;
    const used = this.slots.canCutRestored ? meta.chunks : meta.chunks.filter((c) => c.start < n);
    const marks = meta.checkpoints.filter((c) => c.n <= n);
    const end = used.at(-1)?.end ?? 0;
    const draft = this.draftToRestore(meta, end);
    const blobs = [...used, ...marks, ...(draft?.chunks ?? [])];
    const total = blobs.reduce((sum, c) => sum + c.bytes, 0);
    onProgress?.({ phase: 'restore', loaded: 0, total });
    const data = await store.read(meta, blobs);
    if (!data) return false; // damaged: read() deleted it
    const cells = used.map((c, i) => ({ data: data[i]!, end: c.end }));
    const checkpoints = marks.map((c, i) => ({ n: c.n, data: data[used.length + i]! }));
    if (!(await this.slots.restore(slot, cells, meta.tokens.subarray(0, end), checkpoints))) {
      await store.remove(meta.key);
      return false;
    }
    if (draft) {
      // Refused (no room in the draft's context): the draft reads the conversation again instead.
      const at = used.length + marks.length;
      const chunks = draft.chunks.map((c, i) => ({ data: data[at + i]!, end: c.end }));
      await this.slots.draft!.restore(slot.seq, chunks, draft.text.slice(0, draft.chunks.at(-1)!.end));
    }
    onProgress?.({ phase: 'restore', loaded: total, total });
    void store.touch(meta.key);
    return true;
  }

  /** The record's draft chunks that rebuild the draft's cells of its first `end` tokens' text, for the loaded draft
   * model; null when there are none for it. */
  private draftToRestore(meta: RecordMeta, end: number): { chunks: ChunkMeta[]; text: number[] } | null {
    const d = this.slots.draft;
    if (!d?.saves || meta.draft?.layout !== d.layout) return null;
    const text = textOnly(meta.tokens.subarray(0, end));
    const chunks = meta.draft.chunks
      .filter((c) => c.start < text.length)
      .map((c) => ({ ...c, end: Math.min(c.end, text.length) }));
    return chunks.length ? { chunks, text } : null;
  }

  /** A system prompt's state saved under `key`, or null; a record of another layout is deleted. */
  async loadSystem(key: string, onProgress?: (p: Progress) => void): Promise<SystemState | null> {
    if (!this.enabled) return null;
    const store = this.store!;
    const meta = (await store.records()).get(key);
    if (!meta) return null;
    if (meta.layout !== this.layout || meta.chunks.length !== 1) {
      await store.remove(meta.key);
      return null;
    }
    onProgress?.({ phase: 'restore', loaded: 0, total: meta.bytes });
    const chunks = await store.read(meta);
    if (!chunks) return null;
    onProgress?.({ phase: 'restore', loaded: meta.bytes, total: meta.bytes });
    void store.touch(meta.key);
    return { tokens: meta.tokens, data: chunks[0]! };
  }

  /** Saves a system prompt's state (exported in `exportMs`) in the background. */
  saveSystem(key: string, state: SystemState, exportMs: number): void {
    if (!this.enabled) return;
    const { tokens, data } = state;
    this.saves.add(key, async () => {
      const chunk = { id: newChunkId(), start: 0, end: tokens.length, bytes: data.length, sum: hashBytes(data) };
      const meta: RecordMeta = {
        v: FORMAT_VERSION,
        key,
        kind: 'system',
        layout: this.layout,
        tokens,
        chunks: [chunk],
        checkpoints: [],
        msgHash: null,
        msgCount: 0,
        bytes: data.length,
        lastUsed: Date.now(),
      };
      const t1 = now();
      if (await this.store!.write(meta, [{ chunk, data }], [])) this.saves.count(data.length, exportMs + now() - t1);
    });
  }

  /**
   * After a completed turn: exports the slot's cells past what its record already holds and saves them. `promptEnd`:
   * where the turn's prompt ended. A sliding-window model's record can be restored only to a chunk's end (see
   * restorable), and the next turn usually parts from this one inside the reply (the template renders it back in
   * other tokens): its new cells are saved as two chunks, split before the prompt's last token, the point the next
   * turn can go back to.
   */
  async saveConversation(slot: Slot, promptEnd = 0): Promise<void> {
    if (!this.enabled || slot.tokens.length < this.config.minTokens) return;
    const store = this.store!;
    slot.key ??=
      slot.conversationId !== null ? conversationKey(slot.conversationId, this.layout) : `conversation:${newChunkId()}`;
    const key = slot.key;
    const tokens = Int32Array.from(slot.tokens);
    // Build on the record as the previous (maybe still queued) save leaves it; null there means start over.
    const base = this.planned.has(key) ? this.planned.get(key)! : (store.loaded().get(key) ?? null);
    const same = base && base.layout === this.layout && base.kind === 'conversation' ? base : null;
    const lcp = same ? commonPrefix(same.tokens, tokens) : 0;
    // Keep the saved chunks below the divergence point (cutting the one it falls in; for memory that cannot roll
    // back only whole ones, see restorable); export from there on, now, before the next request changes the slot.
    const kept = (same?.chunks ?? [])
      .filter((c) => (this.slots.canCutRestored ? c.start < lcp : c.end <= lcp))
      .map((c) => ({ ...c, end: Math.min(c.end, lcp) }));
    const from = kept.at(-1)?.end ?? 0;
    const t0 = now();
    const cut = this.slots.canRollBack && !this.slots.canCutRestored ? promptEnd - 1 : -1;
    const turnEnds =
      from < cut && cut < tokens.length ? [cut, tokens.length] : from < tokens.length ? [tokens.length] : [];
    const ends = this.slots.canCutRestored ? inPieces(from, turnEnds, this.piece(slot)) : turnEnds;
    const fresh: Array<{ chunk: ChunkMeta; data: Uint8Array }> = [];
    for (const [i, end] of ends.entries()) {
      const start = i ? ends[i - 1]! : from;
      const data = await exportCells(
        this.slots.ctx,
        slot.seq,
        this.slots.scratch,
        tokens,
        start,
        end === tokens.length ? -1 : end,
      );
      fresh.push({ chunk: { id: newChunkId(), start, end, bytes: data.length, sum: '' }, data });
    }
    const exportMs = now() - t0;
    const chunks = [...kept, ...fresh.map((f) => f.chunk)];
    const added: NewChunk[] = [...fresh];
    const checkpoints = this.checkpointsToSave(slot, same, lcp, chunks, added);
    const draft = await this.draftToSave(slot, tokens, same, lcp, added);
    const next: RecordMeta = {
      v: FORMAT_VERSION,
      key,
      kind: 'conversation',
      layout: this.layout,
      tokens,
      chunks,
      checkpoints,
      draft,
      msgHash: slot.msgHash,
      msgCount: slot.msgCount,
      bytes: [...chunks, ...checkpoints, ...(draft?.chunks ?? [])].reduce((n, c) => n + c.bytes, 0),
      lastUsed: Date.now(),
    };
    this.planned.set(key, next);
    this.saves.add(key, async () => {
      const current = store.loaded().get(key);
      if (same && chunkIds(current) !== chunkIds(same)) {
        // The save this one extends did not happen (storage refused it, or the record was evicted): the chunk
        // exported here is not enough on its own. The next turn saves the whole conversation again.
        this.planned.set(key, null);
        return;
      }
      for (const f of added) f.chunk.sum = hashBytes(f.data);
      const ids = new Set(blobs(next).map((c) => c.id));
      const dropped = (current ? blobs(current) : []).filter((c) => !ids.has(c.id)).map((c) => c.id);
      const t1 = now();
      if (await store.write(next, added, dropped)) {
        this.saves.count(
          added.reduce((n, f) => n + f.data.length, 0),
          exportMs + now() - t1,
        );
        if (this.planned.get(key) === next) this.planned.delete(key);
      } else {
        this.planned.set(key, null);
      }
    });
  }

  /**
   * For memory that cannot roll back: the slot's checkpoints inside the record (a chunk's end has its state already),
   * those the record holds already kept, the others added to `added` (their bytes are in memory: nothing to export).
   */
  private checkpointsToSave(
    slot: Slot,
    base: RecordMeta | null,
    lcp: number,
    chunks: ChunkMeta[],
    added: NewChunk[],
  ): CheckpointMeta[] {
    if (this.slots.canRollBack) return [];
    const ends = new Set(chunks.map((c) => c.end));
    const out: CheckpointMeta[] = [];
    for (const c of slot.checkpoints) {
      if (c.n <= 0 || c.n >= slot.tokens.length || ends.has(c.n)) continue;
      const saved = base?.checkpoints.find((k) => k.n === c.n && k.n <= lcp);
      if (saved) {
        out.push(saved);
        continue;
      }
      const cp = { id: newChunkId(), n: c.n, bytes: c.data.length, sum: '' };
      added.push({ chunk: cp, data: c.data });
      out.push(cp);
    }
    return out;
  }

  /**
   * The draft model's cells of the conversation (the record's `draft`): the saved chunks below where the conversation
   * parted from the record, and the cells the draft holds past them, exported now. As many of the text tokens as the
   * draft has read (it follows a step behind the reply), which may be fewer than the record's.
   */
  private async draftToSave(
    slot: Slot,
    tokens: Int32Array,
    base: RecordMeta | null,
    lcp: number,
    added: NewChunk[],
  ): Promise<DraftRecord | null> {
    const d = this.slots.draft;
    if (!d?.saves) return null;
    const text = textOnly(tokens);
    const read = d.holds(slot.seq, text);
    const limit = textOnly(tokens.subarray(0, lcp)).length;
    const kept = (base?.draft?.layout === d.layout ? base.draft.chunks : [])
      .filter((c) => c.start < limit)
      .map((c) => ({ ...c, end: Math.min(c.end, limit) }));
    const from = kept.at(-1)?.end ?? 0;
    const perToken = d.stateSize(slot.seq) / Math.max(1, read);
    const chunks: ChunkMeta[] = [...kept];
    for (const [i, end] of (read > from ? inPieces(from, [read], this.tokensPer(perToken)) : []).entries()) {
      const start = i ? chunks.at(-1)!.end : from;
      const data = await d.exportCells(slot.seq, start, end);
      const chunk = { id: newChunkId(), start, end, bytes: data.length, sum: '' };
      added.push({ chunk, data });
      chunks.push(chunk);
    }
    return chunks.length ? { layout: d.layout, chunks } : null;
  }

  /** Tokens per exported chunk, for chunkBytes a chunk: from the bytes the slot's cells take now. */
  private piece(slot: Slot): number {
    return this.tokensPer(this.slots.ctx.stateSize(slot.seq) / Math.max(1, slot.tokens.length));
  }

  /** Tokens per chunk of about chunkBytes, at `perToken` bytes a token. */
  private tokensPer(perToken: number): number {
    return Math.max(1, Math.floor(this.config.chunkBytes / Math.max(1, perToken)));
  }

  /** What the storage limit made the saves do since the last call (for the next answer's warnings). */
  takeWarnings(): string[] {
    return this.store?.takeNotes() ?? [];
  }

  /** Resolves when every save queued so far is written. */
  flush(): Promise<void> {
    return this.saves.flush();
  }

  /** The stored side of engine.cache.stats(). */
  async stats(): Promise<Omit<CacheStats, 'memory' | 'hits'>> {
    const store = this.enabled ? this.store : null;
    await store?.records();
    return { ...storedStats(store), saves: { ...this.saves.totals, ms: Math.round(this.saves.totals.ms * 100) / 100 } };
  }

  /** Forgets one conversation's records, or all (after the saves queued so far). */
  async clear(conversationId?: string): Promise<void> {
    await this.flush();
    for (const key of [...this.planned.keys()]) {
      if (conversationId === undefined || namedConversationId(key) === conversationId) this.planned.delete(key);
    }
    if (!this.enabled) return;
    if (conversationId === undefined) await this.store!.clear();
    else await this.store!.removeConversation(conversationId);
  }
}

/**
 * `ends` (chunk ends after `from`) with ends added so that no chunk spans more than `piece` tokens: a turn's new cells
 * are exported in pieces of about CacheOptions.chunkBytes, so neither the heap nor one IndexedDB value ever holds a
 * long conversation of a big model whole (an 8B model's f32 cache, the GPU engine's, takes 256 KiB a token: 4,000
 * tokens are 1 GiB). Only where a record can be cut anywhere (dense attention): a piece of a recurrent or
 * sliding-window model would carry its whole state again.
 */
export function inPieces(from: number, ends: number[], piece: number): number[] {
  const out: number[] = [];
  let start = from;
  for (const end of ends) {
    for (let at = start + piece; at < end; at += piece) out.push(at);
    out.push(end);
    start = end;
  }
  return out;
}

/**
 * Prompt tokens a record can supply, of the `n` it shares with a prompt. A chunk holds the cells of its tokens and,
 * for a recurrent or hybrid model, the recurrent state after its last token (exportCells copies the whole state):
 * such a record can be restored exactly up to a chunk's end only, the end of a saved turn, or to one of its
 * checkpoints. So can a sliding-window model's, whose restored state keeps only the window's last cells (slots.ts).
 */
function restorable(meta: RecordMeta, n: number, canCut: boolean): number {
  if (canCut) return n;
  let end = 0;
  for (const c of [...meta.chunks.map((k) => k.end), ...meta.checkpoints.map((k) => k.n)]) {
    if (c <= n && c > end) end = c;
  }
  return end;
}

/** A record's blobs, as one string: a save planned on a record that never got written has other ones. */
const chunkIds = (m: RecordMeta | null | undefined) => (m ? blobs(m) : []).map((c) => c.id).join(',');
