// Which KV cells a request can reuse, and keeping them for the next one.
//
// Every slot is one llama.cpp sequence whose cells hold exactly `slot.tokens` (prompt and generated tokens, at
// positions 0..n-1). For a request the engine renders and tokenizes the whole prompt; prepare() picks a slot, fills
// it with the longest prefix of those tokens it can find — in the slot itself, in another slot, in a conversation
// saved in IndexedDB, or in a saved system prompt — and trims it where the tokens diverge. The engine decodes the
// rest. Matching is by tokens, never by message counts, so a template that re-renders an earlier turn differently
// (reasoning stripped, other whitespace) only moves the divergence point.
//
// Conversation (IMC) slots are found by conversation_id, else by a hash of the message prefix, else by the longest
// common token prefix (>= minTokens). The system prompt cache (SPC) keeps the state of the rendered system prefix.
// After each turn the slot's new cells are exported (a copy, a few ms) and written to IndexedDB in the background.
import type { CacheSource, CacheStats, ChatMessage, Progress, Tool } from '../../types.ts';
import type { LlamaContext } from '../llama/binding.ts';
import { hashBytes, hashText, hashTokens } from './hash.ts';
import { now } from '../clock.ts';
import { exportCells, importCells, type CellChunk } from './kv-io.ts';
import { commonPrefix, hashMessages } from './prefix.ts';
import { SaveQueue } from './save-queue.ts';
import { type ChunkMeta, FORMAT_VERSION, type KvStore, newChunkId, type RecordMeta } from './store.ts';
import { SystemStates } from './system-states.ts';

export interface CacheConfig {
  persistent: boolean;
  systemPrompt: boolean;
  conversations: boolean;
  minTokens: number;
}

export interface Slot {
  readonly seq: number;
  /** Exactly the tokens whose cells the sequence holds, at positions 0..n-1. */
  tokens: number[];
  /** The conversation record this slot saves to. */
  key: string | null;
  conversationId: string | null;
  /** Hash of the first msgCount messages (with the generated reply) that `tokens` render. */
  msgHash: string | null;
  msgCount: number;
  lastUsed: number;
  /** Set while a request builds on the slot: no other request may take it. */
  pending: boolean;
}

/** A rendered system prefix (system messages and tools) long enough to cache. */
export interface SystemPrefix {
  key: string;
  tokens: Int32Array;
}

export interface CacheRequest {
  messages: ChatMessage[];
  tools: Tool[] | undefined;
  conversationId: string | undefined;
  tokens: Int32Array;
  system: SystemPrefix | null;
  onProgress?: (p: Progress) => void;
}

export interface Prepared {
  slot: Slot;
  /** Prompt tokens already in the slot; the engine decodes tokens[cached..]. */
  cached: number;
  source: CacheSource;
  /** When set, the engine calls captureSystem once the slot holds these tokens. */
  buildSystem: SystemPrefix | null;
}

export class PromptCache {
  readonly slots: Slot[];
  /** Sequence used to carve position ranges out of a slot and to stage imported chunks. */
  readonly scratch: number;
  private readonly systemStates = new SystemStates();
  private readonly saves = new SaveQueue();
  /** Conversation records as the saves queued so far will leave them (null: start the record over). */
  private readonly planned = new Map<string, RecordMeta | null>();
  private readonly hits = { none: 0, memory: 0, indexeddb: 0 };

  constructor(
    private ctx: LlamaContext,
    private readonly config: CacheConfig,
    private readonly store: KvStore | null,
    private readonly layout: string,
    nSlots: number,
  ) {
    this.slots = Array.from({ length: nSlots }, (_, seq) => emptySlot(seq));
    this.scratch = nSlots;
  }

  static sequencesNeeded(nSlots: number): number {
    return nSlots + 1;
  }

  /** Reads the index of saved records (once), so that saving after a turn never waits for IndexedDB. */
  async init(): Promise<void> {
    if (!this.persistent) return;
    try {
      await this.store!.records();
    } catch (err) {
      // Private browsing modes and blocked storage: chat works, only without persistence.
      console.warn(`[hearth] IndexedDB is not usable (${(err as Error).message}); the KV cache stays in memory`);
      this.storeBroken = true;
    }
  }

  private storeBroken = false;

  private get persistent(): boolean {
    return this.config.persistent && this.store !== null && !this.storeBroken;
  }

  async prepare(req: CacheRequest): Promise<Prepared> {
    const { tokens } = req;
    // The last prompt token is always decoded again: its logits start the reply.
    const usable = (n: number) => Math.min(n, tokens.length - 1);
    const free = this.slots.filter((s) => !s.pending);
    if (!free.length) throw new Error('every slot is busy');
    let prepared: Prepared;

    if (!this.config.conversations) {
      const slot = lru(free);
      this.reset(slot);
      prepared = { slot, cached: 0, source: 'none', buildSystem: null };
    } else {
      prepared = await this.prepareConversation(req, free, usable);
    }

    const { slot } = prepared;
    // A cached system prompt beats whatever prefix was found if it covers more.
    if (req.system && this.config.systemPrompt && prepared.cached < usable(req.system.tokens.length)) {
      const restored = await this.restoreSystem(slot, req.system, req.onProgress);
      if (restored) {
        prepared.cached = usable(req.system.tokens.length);
        prepared.source = restored;
        prepared.buildSystem = null;
        this.trim(slot, prepared.cached);
      } else {
        prepared.buildSystem = req.system;
      }
    }
    if (prepared.cached === 0) prepared.source = 'none';
    this.hits[prepared.source]++;
    slot.pending = true;
    slot.lastUsed = Date.now();
    return prepared;
  }

  private async prepareConversation(req: CacheRequest, free: Slot[], usable: (n: number) => number): Promise<Prepared> {
    const { tokens, conversationId } = req;
    const owner = conversationId !== undefined
      ? free.find((s) => s.conversationId === conversationId)
      : this.byMessageHash(free, req);
    const ownerLcp = owner ? usable(commonPrefix(owner.tokens, tokens)) : 0;

    // Another slot sharing a long prefix (the same system prompt, or a conversation that branched).
    let donor: Slot | null = null;
    let donorLcp = 0;
    for (const s of free) {
      if (s === owner) continue;
      const n = usable(commonPrefix(s.tokens, tokens));
      if (n > donorLcp) [donor, donorLcp] = [s, n];
    }
    if (donorLcp < this.config.minTokens) [donor, donorLcp] = [null, 0];

    const saved = this.persistent ? await this.findRecord(req, usable) : null;
    const savedLcp = saved?.lcp ?? 0;

    const best = Math.max(ownerLcp, donorLcp, savedLcp);
    if (owner && ownerLcp === best) {
      this.trim(owner, ownerLcp);
      return { slot: owner, cached: ownerLcp, source: 'memory', buildSystem: null };
    }
    const slot = owner ?? this.takeSlot(free, donor);
    if (saved && savedLcp === best) {
      if (await this.restoreRecord(slot, saved.meta, req.onProgress)) {
        this.trim(slot, savedLcp);
        // A record found by id or message hash continues that conversation; one found by tokens only starts a new one.
        const same = conversationId !== undefined || saved.byHash;
        this.assign(slot, same ? saved.meta.key : null, conversationId, same ? saved.meta : null);
        return { slot, cached: savedLcp, source: 'indexeddb', buildSystem: null };
      }
    }
    this.reset(slot);
    this.assign(slot, null, conversationId, null);
    // (A failed restore may have evicted the donor to make room.)
    if (donor && donorLcp > 0 && donor.tokens.length >= donorLcp) {
      // Unified KV cache: the copy shares the donor's cells, it does not duplicate them.
      this.ctx.seqCp(donor.seq, slot.seq, 0, donorLcp);
      slot.tokens = donor.tokens.slice(0, donorLcp);
      return { slot, cached: donorLcp, source: 'memory', buildSystem: null };
    }
    return { slot, cached: 0, source: 'none', buildSystem: null };
  }

  /** The slot whose message hash matches the start of this request, preferring the longest. */
  private byMessageHash(free: Slot[], req: CacheRequest): Slot | undefined {
    let found: Slot | undefined;
    for (const s of free) {
      if (!s.msgHash || s.conversationId !== null || s.msgCount > req.messages.length) continue;
      if (found && found.msgCount >= s.msgCount) continue;
      if (hashMessages(req.messages.slice(0, s.msgCount), req.tools) === s.msgHash) found = s;
    }
    return found;
  }

  /** The saved conversation that shares the longest prefix with this request: by id, by message hash, by tokens. */
  private async findRecord(req: CacheRequest, usable: (n: number) => number) {
    const records = await this.store!.records();
    const check = async (meta: RecordMeta | undefined) => {
      if (!meta || meta.kind !== 'conversation') return false;
      if (meta.layout !== this.layout) {
        // Written by another model, llama.cpp build or KV layout: never restored.
        await this.store!.remove(meta.key);
        return false;
      }
      return meta.tokens.length < this.ctx.nCtx; // kept for a larger context

    };
    if (req.conversationId !== undefined) {
      const meta = records.get(conversationKey(req.conversationId));
      if (!(await check(meta))) return null;
      return { meta: meta!, lcp: usable(commonPrefix(meta!.tokens, req.tokens)), byHash: true };
    }
    let best: { meta: RecordMeta; lcp: number; byHash: boolean } | null = null;
    for (const meta of [...records.values()]) {
      if (meta.kind !== 'conversation' || meta.key.startsWith(ID_PREFIX) || meta.msgCount > req.messages.length) continue;
      if (this.slots.some((s) => s.key === meta.key)) continue; // already in memory
      const lcp = usable(commonPrefix(meta.tokens, req.tokens));
      const byHash = meta.msgHash === hashMessages(req.messages.slice(0, meta.msgCount), req.tools);
      if (!byHash && lcp < this.config.minTokens) continue;
      if (best && (best.byHash && !byHash || best.lcp >= lcp)) continue;
      if (await check(meta)) best = { meta, lcp, byHash };
    }
    return best;
  }

  private async restoreRecord(slot: Slot, meta: RecordMeta, onProgress?: (p: Progress) => void): Promise<boolean> {
    const total = meta.bytes;
    onProgress?.({ phase: 'restore', loaded: 0, total });
    const chunks = await this.store!.read(meta);
    if (!chunks) return false; // damaged: read() deleted it
    const cells: CellChunk[] = chunks.map((data, i) => ({ data, end: meta.chunks[i]!.end }));
    if (!this.importInto(slot, cells, meta.tokens.length)) {
      await this.store!.remove(meta.key);
      return false;
    }
    slot.tokens = Array.from(meta.tokens.subarray(0, meta.chunks.at(-1)?.end ?? 0));
    onProgress?.({ phase: 'restore', loaded: total, total });
    void this.store!.touch(meta.key);
    return true;
  }

  private async restoreSystem(slot: Slot, system: SystemPrefix, onProgress?: (p: Progress) => void): Promise<CacheSource | null> {
    let source: CacheSource = 'memory';
    let state = this.systemStates.get(system.key);
    if (!state && this.persistent) {
      const records = await this.store!.records();
      const meta = records.get(system.key);
      if (meta && meta.layout === this.layout && meta.chunks.length === 1) {
        onProgress?.({ phase: 'restore', loaded: 0, total: meta.bytes });
        const chunks = await this.store!.read(meta);
        if (chunks) {
          state = { tokens: meta.tokens, data: chunks[0]! };
          this.systemStates.keep(system.key, state);
          source = 'indexeddb';
          onProgress?.({ phase: 'restore', loaded: meta.bytes, total: meta.bytes });
          void this.store!.touch(meta.key);
        }
      } else if (meta) {
        await this.store!.remove(meta.key);
      }
    }
    if (!state || commonPrefix(state.tokens, system.tokens) !== system.tokens.length) return null;
    this.reset(slot);
    if (!this.importInto(slot, [{ data: state.data, end: system.tokens.length }], system.tokens.length)) {
      this.systemStates.delete(system.key);
      return null;
    }
    slot.tokens = Array.from(system.tokens);
    return source;
  }

  /**
   * Imports saved cells into `slot`. llama.cpp needs a contiguous run of free cells for each chunk: when the other
   * conversations in memory leave none, they are dropped and it tries once more.
   */
  private importInto(slot: Slot, cells: CellChunk[], n: number): boolean {
    this.makeRoom(n, slot);
    if (importCells(this.ctx, slot.seq, this.scratch, cells)) return true;
    let evicted = false;
    while (this.evictOne(slot)) evicted = true;
    return evicted && importCells(this.ctx, slot.seq, this.scratch, cells);
  }

  /** Called by the engine once `slot` holds the system prefix's tokens: keeps their state for later requests. */
  captureSystem(slot: Slot, system: SystemPrefix): void {
    const n = system.tokens.length;
    if (slot.tokens.length < n || commonPrefix(slot.tokens, system.tokens) !== n) return;
    const t0 = now();
    const data = exportCells(this.ctx, slot.seq, this.scratch, 0, n);
    const exportMs = now() - t0;
    const state = { tokens: system.tokens, data };
    this.systemStates.keep(system.key, state);
    if (!this.persistent) return;
    this.saves.add(system.key, async () => {
      const chunk = { id: newChunkId(), start: 0, end: n, bytes: data.length, sum: hashBytes(data) };
      const meta: RecordMeta = {
        v: FORMAT_VERSION, key: system.key, kind: 'system', layout: this.layout, tokens: system.tokens,
        chunks: [chunk], msgHash: null, msgCount: 0, bytes: data.length, lastUsed: Date.now(),
      };
      const t1 = now();
      if (await this.store!.write(meta, [{ chunk, data }], [])) this.saves.count(data.length, exportMs + now() - t1);
    });
  }

  /**
   * Called by the engine when a request ends. After a completed turn (`reply` set) the slot remembers which
   * messages it holds and its new cells are exported now and written to IndexedDB in the background.
   */
  finish(slot: Slot, req: CacheRequest, reply: string | null): void {
    slot.pending = false;
    slot.lastUsed = Date.now();
    if (!this.config.conversations) {
      this.reset(slot); // nothing reuses a finished request's cells: free them for the running ones
      return;
    }
    if (reply === null) {
      slot.msgHash = null;
      slot.msgCount = 0;
      return;
    }
    const messages: ChatMessage[] = [...req.messages, { role: 'assistant', content: reply }];
    slot.msgHash = hashMessages(messages, req.tools);
    slot.msgCount = messages.length;
    if (this.persistent && slot.tokens.length >= this.config.minTokens) this.saveSlot(slot);
  }

  private saveSlot(slot: Slot) {
    slot.key ??= slot.conversationId !== null ? conversationKey(slot.conversationId) : `conversation:${newChunkId()}`;
    const key = slot.key;
    const tokens = Int32Array.from(slot.tokens);
    // Build on the record as the previous (maybe still queued) save leaves it; null there means start over.
    const base = this.planned.has(key) ? this.planned.get(key)! : this.store!.loaded().get(key) ?? null;
    const same = base && base.layout === this.layout && base.kind === 'conversation' ? base : null;
    const lcp = same ? commonPrefix(same.tokens, tokens) : 0;
    // Keep the saved chunks below the divergence point (cutting the one it falls in); export from there on, now,
    // before the next request changes the slot.
    const kept = (same?.chunks ?? []).filter((c) => c.start < lcp).map((c) => ({ ...c, end: Math.min(c.end, lcp) }));
    const from = kept.at(-1)?.end ?? 0;
    const t0 = now();
    const data = from < tokens.length ? exportCells(this.ctx, slot.seq, this.scratch, from) : null;
    const exportMs = now() - t0;
    const chunk: ChunkMeta | null = data ? { id: newChunkId(), start: from, end: tokens.length, bytes: data.length, sum: '' } : null;
    const chunks = chunk ? [...kept, chunk] : kept;
    const next: RecordMeta = {
      v: FORMAT_VERSION, key, kind: 'conversation', layout: this.layout, tokens, chunks, msgHash: slot.msgHash,
      msgCount: slot.msgCount, bytes: chunks.reduce((n, c) => n + c.bytes, 0), lastUsed: Date.now(),
    };
    this.planned.set(key, next);
    this.saves.add(key, async () => {
      const current = this.store!.loaded().get(key);
      if (same && chunkIds(current) !== chunkIds(same)) {
        // The save this one extends did not happen (storage refused it, or the record was evicted): the chunk
        // exported here is not enough on its own. The next turn saves the whole conversation again.
        this.planned.set(key, null);
        return;
      }
      if (chunk) chunk.sum = hashBytes(data!);
      const dropped = (current?.chunks ?? []).filter((c) => !chunks.some((k) => k.id === c.id)).map((c) => c.id);
      const t1 = now();
      if (await this.store!.write(next, chunk ? [{ chunk, data: data! }] : [], dropped)) {
        this.saves.count(data?.length ?? 0, exportMs + now() - t1);
        if (this.planned.get(key) === next) this.planned.delete(key);
      } else {
        this.planned.set(key, null);
      }
    });
  }

  /** Empties a slot whose cells may no longer match its tokens (a failed decode). */
  discard(slot: Slot): void {
    this.reset(slot);
  }

  /** Resolves when every save queued so far is written. */
  flush(): Promise<void> {
    return this.saves.flush();
  }

  /** KV cells the slots hold (cells shared by a copied prefix count once per slot: an upper bound). */
  used(): number {
    return this.slots.reduce((sum, s) => sum + s.tokens.length, 0);
  }

  /**
   * Frees KV cells for `n` more tokens by emptying least recently used idle slots other than `keep`. False when
   * they still do not fit.
   */
  makeRoom(n: number, keep?: Slot): boolean {
    while (this.used() + n > this.ctx.nCtx) {
      if (!this.evictOne(keep)) return false;
    }
    return true;
  }

  /** Empties the least recently used idle slot other than `keep`. False when there is none. */
  evictOne(keep?: Slot): boolean {
    const victims = this.slots.filter((s) => s !== keep && !s.pending && s.tokens.length > 0);
    if (!victims.length) return false;
    this.evict(lru(victims));
    return true;
  }

  /** Forgets what an idle slot holds (its conversation stays saved in IndexedDB). */
  evict(slot: Slot): void {
    this.reset(slot);
    slot.key = null;
    slot.conversationId = null;
  }

  /** Every slot's cells as state, to carry them into a new context (see adopt). */
  exportSlots(): Map<number, Uint8Array> {
    const states = new Map<number, Uint8Array>();
    for (const s of this.slots) if (s.tokens.length) states.set(s.seq, this.ctx.stateGet(s.seq));
    return states;
  }

  /**
   * Switches to a new context (a larger one, when the engine grows it) and imports the slots' states from
   * exportSlots into it. A slot whose state is missing or refused is emptied; returns the busy ones among them
   * (their requests cannot go on).
   */
  adopt(ctx: LlamaContext, states: Map<number, Uint8Array>): Slot[] {
    this.ctx = ctx;
    const lost: Slot[] = [];
    for (const s of this.slots) {
      const data = states.get(s.seq);
      if (data && importCells(ctx, s.seq, this.scratch, [{ data, end: s.tokens.length }])) continue;
      if (s.tokens.length && s.pending) lost.push(s);
      this.evict(s);
    }
    return lost;
  }

  private takeSlot(free: Slot[], avoid: Slot | null): Slot {
    const empty = free.find((s) => s.tokens.length === 0 && s.key === null);
    if (empty) return empty;
    const candidates = free.filter((s) => s !== avoid);
    return lru(candidates.length ? candidates : free);
  }

  private assign(slot: Slot, key: string | null, conversationId: string | undefined, meta: RecordMeta | null) {
    slot.conversationId = conversationId ?? null;
    slot.key = conversationId !== undefined ? conversationKey(conversationId) : key;
    slot.msgHash = meta?.msgHash ?? null;
    slot.msgCount = meta?.msgCount ?? 0;
  }

  /** Keeps only the first `n` tokens' cells of a slot. */
  trim(slot: Slot, n: number) {
    if (slot.tokens.length > n) {
      this.ctx.seqRm(slot.seq, n);
      slot.tokens.length = n;
    }
  }

  private reset(slot: Slot) {
    this.ctx.seqRm(slot.seq);
    slot.tokens = [];
    slot.msgHash = null;
    slot.msgCount = 0;
  }

  async stats(): Promise<CacheStats> {
    const records = this.persistent ? await this.store!.records() : new Map<string, RecordMeta>();
    let conversations = 0;
    let systemPrompts = 0;
    for (const m of records.values()) m.kind === 'conversation' ? conversations++ : systemPrompts++;
    return {
      persistent: this.persistent,
      entries: records.size,
      bytes: this.persistent ? this.store!.bytes : 0,
      budgetBytes: this.persistent ? this.store!.budgetBytes : 0,
      conversations,
      systemPrompts,
      memory: {
        slots: this.slots.filter((s) => s.tokens.length > 0).length,
        tokens: this.slots.reduce((n, s) => n + s.tokens.length, 0),
        systemPrompts: this.systemStates.size,
      },
      hits: { ...this.hits },
      saves: { ...this.saves.totals, ms: Math.round(this.saves.totals.ms * 100) / 100 },
    };
  }

  /** Forgets one conversation (memory and IndexedDB), or everything. */
  async clear(conversationId?: string): Promise<void> {
    await this.flush();
    for (const s of this.slots) {
      if (s.pending || (conversationId !== undefined && s.conversationId !== conversationId)) continue;
      this.reset(s);
      s.key = null;
      s.conversationId = null;
    }
    if (conversationId === undefined) {
      this.systemStates.clear();
      this.planned.clear();
    } else {
      this.planned.delete(conversationKey(conversationId));
    }
    if (!this.persistent) return;
    if (conversationId === undefined) await this.store!.clear();
    else await this.store!.remove(conversationKey(conversationId));
  }
}

const ID_PREFIX = 'conversation:id:';
/** The record key of a conversation named by conversation_id. */
export const conversationKey = (id: string) => ID_PREFIX + id;

export function systemKey(layout: string, templateHash: string, tokens: Int32Array): string {
  return `system:${hashText(layout)}:${templateHash}:${hashTokens(tokens)}`;
}

const chunkIds = (m: RecordMeta | null | undefined) => (m?.chunks ?? []).map((c) => c.id).join(',');


function emptySlot(seq: number): Slot {
  return { seq, tokens: [], key: null, conversationId: null, msgHash: null, msgCount: 0, lastUsed: 0, pending: false };
}

function lru(slots: Slot[]): Slot {
  return slots.reduce((a, b) => (b.lastUsed < a.lastUsed ? b : a));
}
