// The context's sequences as slots: each slot is one llama.cpp sequence whose cells hold exactly `slot.tokens`
// (prompt and generated tokens, at positions 0..n-1). Running requests and the conversations kept between requests
// share the context's cells; this table frees them (least recently used first) and carries them into a new context
// when it grows. It asks its holder for the context every time: the context is replaced when it grows.
import type { LlamaContext } from '../llama/binding.ts';
import { importCells, type CellChunk } from './kv-io.ts';

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

/** Whoever owns the context (engine/session.ts). */
export interface ContextHolder {
  readonly ctx: LlamaContext;
}

export class Slots {
  readonly all: Slot[];
  /** Sequence used to carve position ranges out of a slot and to stage imported chunks. */
  readonly scratch: number;

  constructor(private readonly holder: ContextHolder, n: number) {
    this.all = Array.from({ length: n }, (_, seq) => emptySlot(seq));
    this.scratch = n;
  }

  /** Sequences a context needs for `n` slots (n_seq_max). */
  static sequencesNeeded(n: number): number {
    return n + 1;
  }

  get ctx(): LlamaContext {
    return this.holder.ctx;
  }

  /** KV cells the slots hold (cells shared by a copied prefix count once per slot: an upper bound). */
  used(): number {
    return this.all.reduce((sum, s) => sum + s.tokens.length, 0);
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
    const victims = this.all.filter((s) => s !== keep && !s.pending && s.tokens.length > 0);
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

  /** Keeps only the first `n` tokens' cells of a slot. */
  trim(slot: Slot, n: number): void {
    if (slot.tokens.length > n) {
      this.ctx.seqRm(slot.seq, n);
      slot.tokens.length = n;
    }
  }

  /** Empties a slot's cells and what it knew about its messages (it keeps its conversation). */
  reset(slot: Slot): void {
    this.ctx.seqRm(slot.seq);
    slot.tokens = [];
    slot.msgHash = null;
    slot.msgCount = 0;
  }

  /** An empty unassigned slot among `free`, else the least recently used one that is not `avoid`. */
  take(free: Slot[], avoid: Slot | null): Slot {
    const empty = free.find((s) => s.tokens.length === 0 && s.key === null);
    if (empty) return empty;
    const candidates = free.filter((s) => s !== avoid);
    return lru(candidates.length ? candidates : free);
  }

  /**
   * Imports saved cells into `slot`. llama.cpp needs a contiguous run of free cells for each chunk: when the other
   * conversations in memory leave none, they are dropped and it tries once more.
   */
  importInto(slot: Slot, cells: CellChunk[], n: number): boolean {
    this.makeRoom(n, slot);
    if (importCells(this.ctx, slot.seq, this.scratch, cells)) return true;
    let evicted = false;
    while (this.evictOne(slot)) evicted = true;
    return evicted && importCells(this.ctx, slot.seq, this.scratch, cells);
  }

  /** Every slot's cells as state, to carry them into a new context (see importAll). */
  exportAll(): Map<number, Uint8Array> {
    const states = new Map<number, Uint8Array>();
    for (const s of this.all) if (s.tokens.length) states.set(s.seq, this.ctx.stateGet(s.seq));
    return states;
  }

  /**
   * Imports the states from exportAll into the (new) context. A slot whose state is missing or refused is emptied;
   * returns the busy ones among them (their requests cannot go on).
   */
  importAll(states: Map<number, Uint8Array>): Slot[] {
    const lost: Slot[] = [];
    for (const s of this.all) {
      const data = states.get(s.seq);
      if (data && importCells(this.ctx, s.seq, this.scratch, [{ data, end: s.tokens.length }])) continue;
      if (s.tokens.length && s.pending) lost.push(s);
      this.evict(s);
    }
    return lost;
  }
}

function emptySlot(seq: number): Slot {
  return { seq, tokens: [], key: null, conversationId: null, msgHash: null, msgCount: 0, lastUsed: 0, pending: false };
}

export function lru(slots: Slot[]): Slot {
  return slots.reduce((a, b) => (b.lastUsed < a.lastUsed ? b : a));
}
