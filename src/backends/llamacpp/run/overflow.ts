// When a reply fills the context and it cannot grow, each request's context_overflow policy applies: 'stop' ends it
// with finish_reason 'length', 'error' fails it with ContextFullError, 'shift' drops the oldest tokens after n_keep,
// moves the later cells down, and it goes on.
import { ContextFullError } from '../../../errors.ts';
import { commonPrefix } from '../cache/prefix.ts';
import type { Job } from './job.ts';
import type { Session } from './session.ts';

/** Ends a running request: with an error, or (none) with finish_reason 'length'. */
export type EndJob = (job: Job, error?: unknown) => void;

/** The context is full: the replies that went past their budget (else all) apply their policy. */
export function overflow(s: Session, active: Job[], end: EndJob): void {
  const generating = active.filter((j) => j.phase === 'generate');
  const over = generating.filter((j) => j.slot.tokens.length >= j.demand);
  const victims = over.length ? over : generating;
  if (!victims.length) {
    // Only prompts left and no room: the last admitted gives way (it has streamed nothing yet).
    const job = active.at(-1)!;
    end(
      job,
      new ContextFullError(`the prompt is ${job.tokens.length} tokens but the context has no room left for it`, {
        promptTokens: job.tokens.length,
        nCtx: s.ctx.nCtx,
      }),
    );
    return;
  }
  for (const job of victims) {
    const policy = job.req.contextOverflow;
    if (policy === 'shift') {
      if (shift(s, job)) continue;
      if (!s.canRollBack) {
        job.warnings.push(
          `context_overflow 'shift' cannot drop tokens from a ${s.info.memory.kind} model's state: ` +
            'the reply stopped when the context was full',
        );
      } else if (!s.ctx.canShift) {
        job.warnings.push(
          "context_overflow 'shift' cannot move the cells of a model with M-RoPE positions (Qwen2-VL, Qwen3-VL…): " +
            'the reply stopped when the context was full',
        );
      }
    }
    if (policy === 'error') {
      end(
        job,
        new ContextFullError(`the reply filled the context (${s.ctx.nCtx} tokens) after ${job.n} tokens`, {
          promptTokens: job.tokens.length,
          nCtx: s.ctx.nCtx,
        }),
      );
    } else {
      end(job);
    }
  }
}

/**
 * Context shift: keeps the first n_keep tokens (default: the system prompt), drops half of the rest — the oldest —
 * with seq_rm and moves the later cells down with seq_add. slot.tokens drops the same tokens, so it still says
 * exactly what the cells hold. False when there is nothing to drop.
 */
function shift(s: Session, job: Job): boolean {
  // A recurrent state cannot drop tokens, an M-RoPE model's cells cannot move: the policy falls back to 'stop'.
  if (!s.canRollBack || !s.ctx.canShift) return false;
  const slot = job.slot;
  const len = slot.tokens.length;
  const keep = Math.min(job.prompt!.keep, len - 2);
  const discard = Math.floor((len - keep) / 2);
  if (keep < 0 || discard < 1) return false;
  // Cells this slot shares with another (a copied prefix) must not move under the other one.
  for (const other of s.cache.slots.all) {
    if (other === slot || commonPrefix(other.tokens, slot.tokens) <= keep + discard) continue;
    if (other.pending) return false;
    s.cache.slots.evict(other);
  }
  if (!s.ctx.seqRm(slot.seq, keep, keep + discard)) return false;
  s.ctx.seqAdd(slot.seq, keep + discard, -1, -discard);
  slot.tokens.splice(keep, discard);
  job.shiftedAt = Math.min(job.shiftedAt ?? keep, keep);
  return true;
}
