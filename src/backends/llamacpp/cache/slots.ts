// The context's sequences as slots: each slot is one llama.cpp sequence whose cells hold exactly `slot.tokens`
// (prompt and generated tokens, in order; each at positionAt's position: its index, but after an M-RoPE image).
// Running requests and the conversations kept between requests share the context's cells; this table frees them
// (least recently used first) and carries them into a new context when it grows. It asks its holder for the context
// every time: the context is replaced when it grows.
//
// A recurrent or hybrid model's state cannot be rolled back to an earlier token (seq_rm refuses a partial removal).
// For those, a slot keeps checkpoints: the non-rollable part of its state (llama_state_seq_get_data_ext with
// LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY) at a few token counts. Trimming restores the last one at or before the cut and
// drops the attention cells after it; with none, the slot starts over.
//
// A sliding-window model's state, once written out and read back (a record from IndexedDB, a system prompt's state,
// a context that grew), holds only the window's last cells in its sliding-window layers, even with a full-size cache
// (llama.cpp drops the older ones on import). Such a slot can go back only to its restored end (`floor`), and a
// record is restored only to a chunk's end, as for recurrent state.
import type { LlamaContext } from '../binding/context.ts';
import { positionAt } from '../binding/mtmd.ts';
import { importCells, type CellChunk } from './kv-io.ts';

export interface Slot {
  readonly seq: number;
  /** Exactly the tokens whose cells the sequence holds, in order (their positions: positionAt). */
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
  /** For memory that cannot roll back: states to go back to, by token count, ascending. */
  checkpoints: Checkpoint[];
  /** Trimming below this many tokens loses cells (a sliding-window state read back: see above); 0 otherwise. */
  floor: number;
}

export interface Checkpoint {
  /** The slot held its first `n` tokens when this was taken. */
  n: number;
  /** The part of the state that cannot be rolled back (stateGet with partial). */
  data: Uint8Array;
}

// Checkpoints a slot keeps, in number and bytes: the oldest after the first (the system prompt's end) goes first. A
// recurrent state is a few MB for small models, a sliding window's cells tens of MB for a 4B one: the byte bound
// keeps a slot's share of the worker's memory, the count the copies a new turn's checkpoints make.
const MAX_CHECKPOINTS = 10;
const MAX_CHECKPOINT_BYTES = 64 * 2 ** 20;

/**
 * A draft model's cells beside the slots' (run/draft.ts: speculative decoding), as a conversation's record saves and
 * restores them. Its sequences are the slots' (same numbers); its tokens are a slot's without media placeholders.
 */
export interface DraftCells {
  /** The draft's fingerprint, llama.cpp build and KV layout: saved cells are restored only into the same. */
  readonly layout: string;
  /** Whether its cells are worth saving: a sliding-window draft's, read back, would hold only its window. */
  readonly saves: boolean;
  /** How many of `tokens`, from the first, the draft's sequence `seq` holds. */
  holds(seq: number, tokens: ArrayLike<number>): number;
  /** The cells of its tokens [start, end) of `seq` (end < 0: to the end), as exportCells writes them. */
  exportCells(seq: number, start: number, end: number): Promise<Uint8Array>;
  /** The bytes its whole sequence `seq` takes (for chunk sizes). */
  stateSize(seq: number): number;
  /** Rebuilds `seq` from saved chunks, after which it holds `tokens`; false (it then holds nothing) when refused. */
  restore(seq: number, chunks: CellChunk[], tokens: ArrayLike<number>): Promise<boolean>;
}

/** Whoever owns the context (backends/llamacpp/run/session.ts). */
export interface ContextHolder {
  readonly ctx: LlamaContext;
  /** Whether seq_rm can cut a sequence anywhere (attention caches); false for recurrent and hybrid models. */
  readonly canRollBack: boolean;
  /** Whether a state read back into a sequence keeps only the sliding window's last cells (sliding-window models). */
  readonly windowedState: boolean;
  /** The draft model's cells, when one is loaded. */
  readonly draftCells: DraftCells | null;
}

export class Slots {
  readonly all: Slot[];
  /** Sequence used to carve position ranges out of a slot and to stage imported chunks. */
  readonly scratch: number;

  constructor(
    private readonly holder: ContextHolder,
    n: number,
  ) {
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

  get canRollBack(): boolean {
    return this.holder.canRollBack;
  }

  /** The draft model's cells beside the slots', or null. */
  get draft(): DraftCells | null {
    return this.holder.draftCells;
  }

  /** Whether a state read back from bytes can be cut anywhere (see the header). */
  get canCutRestored(): boolean {
    return this.holder.canRollBack && !this.holder.windowedState;
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

  /**
   * Keeps the first `n` tokens of a slot, or fewer when the memory cannot roll back that far: as many as the last
   * checkpoint at or before `n` holds, else none. Returns how many it kept.
   */
  async trim(slot: Slot, n: number): Promise<number> {
    if (slot.tokens.length <= n) return slot.tokens.length;
    const at = (k: number) => positionAt(slot.tokens, k);
    // seq_rm also "succeeds" on a sliding window that lost the cells before the cut: only memory that rolls back is
    // cut there (down to its floor); the rest goes back to a checkpoint, whose state puts back what was lost.
    if (!(this.canRollBack && n >= slot.floor && this.ctx.seqRm(slot.seq, at(n)))) {
      const cp = checkpointAt(slot, n);
      if (!cp || !(await this.ctx.stateSet(cp.data, slot.seq, true)) || !this.ctx.seqRm(slot.seq, at(cp.n))) {
        this.reset(slot);
        return 0;
      }
      n = cp.n;
    }
    slot.tokens.length = n;
    slot.checkpoints = slot.checkpoints.filter((c) => c.n <= n);
    return n;
  }

  /** How many of a slot's first `n` tokens trim() would keep (see there). */
  reachable(slot: Slot, n: number): number {
    if (n >= slot.tokens.length || (this.canRollBack && n >= slot.floor)) return Math.min(n, slot.tokens.length);
    return checkpointAt(slot, n)?.n ?? 0;
  }

  /** For memory that cannot roll back: keeps the slot's state as it is now, to come back to (see trim). */
  async checkpoint(slot: Slot): Promise<void> {
    if (this.canRollBack || slot.checkpoints.at(-1)?.n === slot.tokens.length) return;
    const n = slot.tokens.length;
    slot.checkpoints.push({ n, data: await this.ctx.stateGet(slot.seq, true) });
    const bytes = () => slot.checkpoints.reduce((sum, c) => sum + c.data.byteLength, 0);
    while (
      slot.checkpoints.length > 2 &&
      (slot.checkpoints.length > MAX_CHECKPOINTS || bytes() > MAX_CHECKPOINT_BYTES)
    ) {
      slot.checkpoints.splice(1, 1);
    }
  }

  /**
   * Fills the empty `slot` with the first `n` tokens of `donor` and returns how many it got (fewer when the memory
   * cannot roll back: see trim). The KV cache is unified: the copy shares the donor's cells, it does not duplicate them.
   */
  copyPrefix(donor: Slot, slot: Slot, n: number): Promise<number> {
    const whole = !this.canRollBack;
    this.ctx.seqCp(donor.seq, slot.seq, 0, whole ? -1 : positionAt(donor.tokens, n));
    slot.tokens = donor.tokens.slice(0, whole ? donor.tokens.length : n);
    slot.checkpoints = [...donor.checkpoints];
    slot.floor = donor.floor;
    return this.trim(slot, n);
  }

  /** Empties a slot's cells and what it knew about its messages (it keeps its conversation). */
  reset(slot: Slot): void {
    if (!this.ctx.seqRm(slot.seq)) throw new Error(`llama.cpp could not empty sequence ${slot.seq}`);
    slot.tokens = [];
    slot.checkpoints = [];
    slot.floor = 0;
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
  async importInto(slot: Slot, cells: CellChunk[], tokens: ArrayLike<number>): Promise<boolean> {
    this.makeRoom(tokens.length, slot);
    if (await importCells(this.ctx, slot.seq, this.scratch, cells, tokens)) return true;
    let evicted = false;
    while (this.evictOne(slot)) evicted = true;
    return evicted && (await importCells(this.ctx, slot.seq, this.scratch, cells, tokens));
  }

  /** Imports the saved cells of exactly `tokens` into `slot` (importInto), which then holds them, with the saved
   * `checkpoints` (memory that cannot roll back) and one at its end. False when llama.cpp refuses them. */
  async restore(
    slot: Slot,
    cells: CellChunk[],
    tokens: ArrayLike<number>,
    checkpoints: Checkpoint[] = [],
  ): Promise<boolean> {
    if (!(await this.importInto(slot, cells, tokens))) return false;
    slot.tokens = Array.from(tokens);
    slot.floor = this.holder.windowedState ? Math.max(0, tokens.length - 1) : 0;
    slot.checkpoints = this.canRollBack ? [] : checkpoints.filter((c) => c.n < tokens.length);
    await this.checkpoint(slot);
    return true;
  }

  /** Every slot's cells as state, to carry them into a new context (see importAll). */
  async exportAll(): Promise<Map<number, Uint8Array>> {
    const states = new Map<number, Uint8Array>();
    for (const s of this.all) if (s.tokens.length) states.set(s.seq, await this.ctx.stateGet(s.seq));
    return states;
  }

  /**
   * Imports the states from exportAll into the (new) context. A slot whose state is missing or refused is emptied;
   * returns the busy ones among them (their requests cannot go on).
   */
  async importAll(states: Map<number, Uint8Array>): Promise<Slot[]> {
    const lost: Slot[] = [];
    for (const s of this.all) {
      const data = states.get(s.seq);
      if (data && (await importCells(this.ctx, s.seq, this.scratch, [{ data, end: s.tokens.length }], s.tokens))) {
        if (this.holder.windowedState) s.floor = Math.max(0, s.tokens.length - 1);
        continue;
      }
      if (s.tokens.length && s.pending) lost.push(s);
      this.evict(s);
    }
    return lost;
  }
}

function emptySlot(seq: number): Slot {
  return {
    seq,
    tokens: [],
    key: null,
    conversationId: null,
    msgHash: null,
    msgCount: 0,
    lastUsed: 0,
    pending: false,
    checkpoints: [],
    floor: 0,
  };
}

/** The slot's last checkpoint at or before token count `n`. */
function checkpointAt(slot: Slot, n: number): Checkpoint | undefined {
  let found: Checkpoint | undefined;
  for (const c of slot.checkpoints) if (c.n <= n) found = c;
  return found;
}

export function lru(slots: Slot[]): Slot {
  return slots.reduce((a, b) => (b.lastUsed < a.lastUsed ? b : a));
}
