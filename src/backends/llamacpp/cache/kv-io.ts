// Moving KV cells between a sequence and byte chunks. The context's KV cache is unified, so seq_cp only tags cells
// with another sequence id (no data copy) and a scratch sequence can carve out any position range for export.

import type { LlamaContext } from '../binding/context.ts';

/** The state of positions [p0, p1) of `seq` (p1 < 0: to the end), as llama_state_seq_get_data writes it. */
export async function exportCells(
  ctx: LlamaContext,
  seq: number,
  scratch: number,
  p0: number,
  p1 = -1,
): Promise<Uint8Array> {
  if (p0 === 0 && p1 < 0) return ctx.stateGet(seq);
  ctx.seqRm(scratch);
  try {
    ctx.seqCp(seq, scratch, p0, p1);
    return await ctx.stateGet(scratch);
  } finally {
    ctx.seqRm(scratch);
  }
}

export interface CellChunk {
  data: Uint8Array;
  /** Positions past `end` that the chunk holds are dropped (the record was cut there). */
  end: number;
}

/**
 * Rebuilds `seq` from chunks saved by exportCells in position order: the first straight into `seq`, each later one
 * into the scratch sequence and then copied over. Returns false (and leaves `seq` empty) when llama.cpp refuses a
 * chunk — a layout it cannot read, or no contiguous room in the cache.
 */
export async function importCells(
  ctx: LlamaContext,
  seq: number,
  scratch: number,
  chunks: CellChunk[],
): Promise<boolean> {
  ctx.seqRm(seq);
  ctx.seqRm(scratch);
  try {
    for (let i = 0; i < chunks.length; i++) {
      const { data, end } = chunks[i]!;
      const target = i === 0 ? seq : scratch;
      if (!(await ctx.stateSet(data, target)) || !ctx.seqRm(target, end)) throw new Refused();
      if (target === scratch) {
        ctx.seqCp(scratch, seq);
        ctx.seqRm(scratch);
      }
    }
    const last = chunks.at(-1)?.end ?? 0;
    if (ctx.seqPosMax(seq) !== last - 1) throw new Refused();
    return true;
  } catch (err) {
    ctx.seqRm(seq);
    ctx.seqRm(scratch);
    if (err instanceof Refused) return false;
    throw err;
  }
}

class Refused extends Error {}
