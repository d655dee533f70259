// The context grows with demand: when the running requests need more cells than it has, it is recreated larger and
// every slot's cells are carried over as state (the same values, no recompute), up to kv.maxCtx (kv-layout.ts).
import { ContextFullError } from '../../../errors.ts';
import type { Slot } from '../cache/slots.ts';
import { contextFor } from '../cache/kv-layout.ts';
import type { Session } from './session.ts';

/** Told the busy slots a resize could not carry over: their requests cannot go on. */
export type LostSlots = (slots: Slot[]) => void;

/** Makes room for `n` more cells: idle cached conversations go first, then the context grows. */
export async function fit(s: Session, n: number, lost: LostSlots): Promise<boolean> {
  while (!s.cache.slots.makeRoom(n)) {
    if (!(await grow(s, s.cache.slots.used() + n, lost))) return false;
  }
  return true;
}

/** Grows the context to hold `cells` (and by one cell at least). False when it cannot: at its limit, or no memory. */
export async function grow(s: Session, cells: number, lost: LostSlots): Promise<boolean> {
  if (!s.kv.dynamic || s.ctx.nCtx >= s.kv.maxCtx) return false;
  try {
    await resize(s, Math.max(contextFor(cells, s.kv), Math.min(s.kv.maxCtx, s.ctx.nCtx + 1)), 0, lost);
  } catch (err) {
    if (err instanceof ContextFullError) return false; // no memory for more: the overflow policies apply
    throw err;
  }
  return true;
}

/**
 * Recreates the context with `nCtx` cells and carries every slot's cells over. The logits of the last decode are
 * gone: callers sample before. Without memory for it, the context keeps its old size, which becomes the limit, and
 * this throws ContextFullError (naming `promptTokens`, the prompt that asked for the room).
 */
export async function resize(s: Session, nCtx: number, promptTokens: number, lost: LostSlots): Promise<void> {
  const states = await s.cache.slots.exportAll();
  const refused = await s.resizeContext(nCtx);
  lost(await s.cache.slots.importAll(states));
  if (refused) {
    throw new ContextFullError(
      `the context could not grow to ${nCtx} tokens (${refused.message}); lower kvBudgetBytes or nParallel`,
      { promptTokens, nCtx: s.ctx.nCtx },
    );
  }
}
