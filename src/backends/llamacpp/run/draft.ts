// A draft model for speculative decoding (LoadOptions.draft): a smaller model of the main model's vocabulary, with a
// context of its own in the same module, whose greedy continuation is what the main model checks each step.
//
// The draft's sequences follow the main context's slots (same sequence numbers). Before a step, a request's draft
// sequence is brought to what its slot holds plus the token the step decodes: the tokens it has in common stay, the
// rest is dropped and read, at most `chunk` tokens a step for all requests together. A request whose draft is still
// behind gets no guesses that step (its reply goes on without them); one that is level gets the draft's greedy
// tokens, one draft decode per guessed token for all requests together, until `n` or a token the draft doubts (below
// p_min). Matching by tokens makes every way a slot changes (a new turn, another conversation, an edit, a context
// shift, a restore from IndexedDB) the same case: the draft reads what differs.
//
// A conversation's record in IndexedDB keeps the draft's cells beside the model's (cache/persistence.ts, through
// DraftCells): after a reload the draft resumes too. What no record holds — a system prompt's state, a shipped prompt
// state — the draft reads beside the reply's first steps. Images and audio are not the draft's: it reads the text
// around them (its guesses are only checked, never trusted).
import type { Speculative } from '../../../contract.ts';
import type { LlamaContext } from '../binding/context.ts';
import type { LlamaModel } from '../binding/model.ts';
import { textOnly } from '../binding/mtmd.ts';
import { topToken } from '../binding/sampler.ts';
import { commonPrefix } from '../cache/prefix.ts';
import { now } from '../../../core/clock.ts';
import { type CellChunk, exportCells, importCells } from '../cache/kv-io.ts';
import type { DraftCells } from '../cache/slots.ts';

/** The draft's likeliest tokens its probability (p_min) is measured among, as llama.cpp's draft sampler's top-k. */
const CANDIDATES = 10;

/** What one request asks of the draft this step. */
export interface DraftAsk {
  seq: number;
  /** What the main model's sequence will hold before the guesses (draftView): the slot's tokens and the token the
   * step decodes (none while the request still reads its prompt). */
  tokens: DraftView;
  /** Guesses wanted at most (0: only follow the slot). */
  n: number;
  spec: Speculative;
  /** Tokens read for it at most this step (default: as many as the step's chunk leaves). */
  max?: number;
}

/** A slot's tokens as the draft reads them, without copying them: `tokens`, then `next` when it is not null. */
export interface DraftView {
  tokens: ArrayLike<number>;
  next: number | null;
}

export class Draft implements DraftCells {
  /** Exactly the tokens each draft sequence holds, at positions 0, 1, …. */
  private readonly held: number[][];
  /** The sequence exports and imports stage their cells in (the main context's scratch number: no slot's). */
  private readonly scratch: number;
  readonly saves: boolean;
  /** Draft decodes, tokens read and tokens guessed, and the time guess() took (for the benchmark). */
  readonly profile = { decodes: 0, read: 0, guessed: 0, ms: 0 };

  /** `ctx()`: the draft's context, asked for each time (the session recreates it when the main context grows; null
   * while there was no memory for it: no guesses then). */
  constructor(
    readonly model: LlamaModel,
    private readonly context: () => LlamaContext | null,
    nSeq: number,
    /** Tokens the main model has: a draft token past them is never guessed (vocabularies may differ in padding). */
    private readonly mainVocab: number,
    readonly layout: string,
  ) {
    this.held = Array.from({ length: nSeq }, () => []);
    this.scratch = nSeq - 1;
    this.saves = model.memory().kind === 'attention';
  }

  /** The draft's context, where the caller checked there is one. */
  private ctx(): LlamaContext {
    return this.context()!;
  }

  holds(seq: number, tokens: ArrayLike<number>): number {
    return commonPrefix(this.held[seq]!, tokens);
  }

  exportCells(seq: number, start: number, end: number): Promise<Uint8Array> {
    return exportCells(this.ctx(), seq, this.scratch, this.held[seq]!, start, end);
  }

  stateSize(seq: number): number {
    return this.context()?.stateSize(seq) ?? 0;
  }

  async restore(seq: number, chunks: CellChunk[], tokens: ArrayLike<number>): Promise<boolean> {
    this.held[seq] = []; // until the import is done: a failure leaves cells no token list describes
    if (!this.context()) return false;
    let ok = await importCells(this.ctx(), seq, this.scratch, chunks, tokens);
    if (!ok) {
      // No contiguous room: the other sequences' cells go (as decode() does), and it tries once more.
      for (const [s, h] of this.held.entries()) if (s !== seq && h.length) this.drop(s, 0);
      ok = await importCells(this.ctx(), seq, this.scratch, chunks, tokens);
    }
    this.held[seq] = ok ? Array.from(tokens) : [];
    return ok;
  }

  /** The draft context was recreated: it holds nothing. */
  forget(): void {
    for (const h of this.held) h.length = 0;
  }

  /** Guesses for each ask, in order (none for an ask whose draft is still behind, or when the draft fails). */
  async guess(asks: DraftAsk[], chunk: number): Promise<number[][]> {
    const t0 = now();
    const out = asks.map((): number[] => []);
    const rows = await this.follow(asks, chunk);
    let live = asks.flatMap((a, i) => (rows[i]! >= 0 ? [{ a, i, row: rows[i]! }] : []));
    while (live.length) {
      const going: typeof live = [];
      for (const l of live) {
        const top = topToken(this.ctx(), l.row, CANDIDATES);
        if (top.p < l.a.spec.pMin || top.token >= this.mainVocab) continue;
        out[l.i]!.push(top.token);
        this.profile.guessed++;
        // The last guess is never decoded: the main model checks it; after an end-of-generation token nothing follows.
        if (out[l.i]!.length < l.a.n && !this.model.eogTokens.has(top.token)) going.push(l);
      }
      if (!going.length) break;
      const got = await this.decode(going.map((l) => ({ seq: l.a.seq, tokens: [out[l.i]!.at(-1)!], logits: true })));
      if (!got) break;
      live = going.map((l, k) => ({ ...l, row: got[k]! }));
    }
    this.profile.ms += now() - t0;
    return out;
  }

  /**
   * Brings each ask's draft sequence toward its tokens, reading at most `chunk` tokens in all. Returns, per ask, the
   * batch row of the logits after its last token, or -1 (it wants no guesses, is still behind, or the decode failed).
   */
  async follow(asks: DraftAsk[], chunk: number): Promise<number[]> {
    if (!this.context()) return asks.map(() => -1);
    const parts: Array<{ seq: number; tokens: number[]; logits: boolean }> = [];
    const index = asks.map(() => -1);
    let room = chunk;
    for (const [i, a] of asks.entries()) {
      const { tokens, next } = a.tokens;
      const length = tokens.length + (next === null ? 0 : 1);
      const at = (k: number) => (k < tokens.length ? tokens[k]! : next!);
      const h = this.held[a.seq]!;
      let keep = commonPrefix(h, tokens);
      if (keep === tokens.length && next !== null && h.length > keep && h[keep] === next) keep++;
      // Guesses start from the logits after the last token: it is decoded again when the draft holds it already.
      if (a.n > 0) keep = Math.min(keep, length - 1);
      if (keep < h.length) this.drop(a.seq, keep);
      const take = Math.min(room, a.max ?? room, length - keep);
      if (take <= 0) continue;
      const part = Array.from({ length: take }, (_, k) => at(keep + k));
      // A token the draft does not have (its vocabulary may be smaller by some padding) would fail the whole batch:
      // that conversation gets no guesses, the others do.
      if (part.some((t) => t >= this.model.nVocab)) continue;
      room -= take;
      index[i] = parts.length;
      parts.push({ seq: a.seq, tokens: part, logits: keep + take === length && a.n > 0 });
    }
    const got = parts.length ? await this.decode(parts) : null;
    return index.map((p) => (p >= 0 && got && parts[p]!.logits ? got[p]! : -1));
  }

  /**
   * One decode of `parts` into the draft context, each appended to its sequence. Returns each part's logits row, or
   * null when llama.cpp refused the batch (its sequences then hold what they held before). With no room, the
   * sequences no part is for are emptied first and it tries again.
   */
  private async decode(parts: Array<{ seq: number; tokens: number[]; logits: boolean }>): Promise<number[] | null> {
    const tokens: number[] = [];
    const pos: number[] = [];
    const seq: number[] = [];
    const out: boolean[] = [];
    const rows: number[] = [];
    for (const p of parts) {
      const start = this.held[p.seq]!.length;
      for (const [k, t] of p.tokens.entries()) {
        tokens.push(t);
        pos.push(start + k);
        seq.push(p.seq);
        out.push(p.logits && k === p.tokens.length - 1);
      }
      rows.push(tokens.length - 1);
    }
    let status = await this.ctx().decode(tokens, pos, seq, out);
    if (status === 1) {
      const busy = new Set(parts.map((p) => p.seq));
      for (const [s, h] of this.held.entries()) if (!busy.has(s) && h.length) this.drop(s, 0);
      status = await this.ctx().decode(tokens, pos, seq, out);
    }
    this.profile.decodes++;
    if (status !== 0) {
      // What llama.cpp took of a refused batch is dropped.
      for (const p of parts) this.drop(p.seq, this.held[p.seq]!.length);
      return null;
    }
    this.profile.read += tokens.length;
    for (const p of parts) this.held[p.seq]!.push(...p.tokens);
    return rows;
  }

  /** Keeps the first `n` tokens of a draft sequence (the draft's memory rolls back: load.ts refuses one that does
   * not). */
  private drop(seq: number, n: number) {
    const h = this.held[seq]!;
    if (!this.ctx().seqRm(seq, n)) {
      this.ctx().seqRm(seq);
      h.length = 0;
    } else if (h.length > n) h.length = n;
  }
}

/** The tokens a draft follows for a slot: its tokens (without media placeholders, which the draft cannot read), then
 * `next` (null: none). Copies the tokens only when the prompt has media. */
export function draftView(tokens: ArrayLike<number>, next: number | null, hasMedia: boolean): DraftView {
  return { tokens: hasMedia ? textOnly(tokens) : tokens, next };
}
