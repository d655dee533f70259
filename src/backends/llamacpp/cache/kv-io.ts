// Moving KV cells between a sequence and byte chunks. The context's KV cache is unified, so seq_cp only tags cells
// with another sequence id (no data copy) and a scratch sequence can carve out any position range for export.
// Callers speak of token counts; llama.cpp of positions, which differ after an M-RoPE image (binding/mtmd.ts).
import type { LlamaContext } from '../binding/context.ts';
import { isPlaceholder, positionAt } from '../binding/mtmd.ts';

/**
 * The state of the cells of tokens [start, end) of `seq`, which holds `tokens` (end < 0: to the end), as
 * llama_state_seq_get_data writes it.
 */
export async function exportCells(
  ctx: LlamaContext,
  seq: number,
  scratch: number,
  tokens: ArrayLike<number>,
  start: number,
  end = -1,
): Promise<Uint8Array> {
  if (start === 0 && end < 0) return ctx.stateGet(seq);
  ctx.seqRm(scratch);
  try {
    ctx.seqCp(seq, scratch, positionAt(tokens, start), end < 0 ? -1 : positionAt(tokens, end));
    return await ctx.stateGet(scratch);
  } finally {
    ctx.seqRm(scratch);
  }
}

export interface CellChunk {
  data: Uint8Array;
  /** Cells past the first `end` tokens that the chunk holds are dropped (the record was cut there). */
  end: number;
}

/**
 * Rebuilds `seq` from chunks saved by exportCells in order, the cells of `tokens`: the first straight into `seq`,
 * each later one into the scratch sequence and then copied over. Returns false (and leaves `seq` empty) when
 * llama.cpp refuses a chunk — a layout it cannot read, or no contiguous room in the cache — or the cells do not end
 * where the tokens do.
 */
export async function importCells(
  ctx: LlamaContext,
  seq: number,
  scratch: number,
  chunks: CellChunk[],
  tokens: ArrayLike<number>,
): Promise<boolean> {
  ctx.seqRm(seq);
  ctx.seqRm(scratch);
  try {
    for (let i = 0; i < chunks.length; i++) {
      const { data, end } = chunks[i]!;
      const target = i === 0 ? seq : scratch;
      if (!(await ctx.stateSet(data, target)) || !ctx.seqRm(target, positionAt(tokens, end))) throw new Refused();
      if (target === scratch) {
        ctx.seqCp(scratch, seq);
        ctx.seqRm(scratch);
      }
    }
    const last = chunks.at(-1)?.end ?? 0;
    // The last cell is at the last token's position; an M-RoPE image's cells all sit at the image's first one.
    const max = ctx.seqPosMax(seq);
    const want = positionAt(tokens, last) - 1;
    if (max > want || (max < want && !isPlaceholder(tokens[last - 1] ?? 0))) throw new Refused();
    return true;
  } catch (err) {
    ctx.seqRm(seq);
    ctx.seqRm(scratch);
    if (err instanceof Refused) return false;
    throw err;
  }
}

class Refused extends Error {}
