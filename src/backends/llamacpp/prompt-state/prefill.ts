// The state of a prompt on its own: its tokens decoded into an idle slot and the slot's whole sequence exported (its
// cells and, for recurrent and hybrid models, the recurrent state after the last token). A prompt state file holds
// it (engine.cache.exportPrompt). Runs while no request does (Scheduler.exclusive); the slot keeps the tokens after,
// so later requests that start with them reuse the cells.
import { AbortError, ContextFullError, EngineError } from '../../../errors.ts';
import type { CallControl } from '../../../contract.ts';
import { yieldToEventLoop } from '../run/yield.ts';
import { fit } from '../run/growth.ts';
import type { Session } from '../run/session.ts';

export async function prefillState(s: Session, tokens: Int32Array, control: CallControl = {}): Promise<Uint8Array> {
  const n = tokens.length;
  if (n + 1 > s.kv.maxCtx) {
    throw new ContextFullError(
      `the prompt is ${n} tokens but the context holds at most ${s.kv.maxCtx}: load the model with a larger ` +
        'nCtx or kvBudgetBytes',
      { promptTokens: n, nCtx: s.kv.maxCtx },
    );
  }
  const slots = s.cache.slots;
  const slot = slots.take(slots.all, null);
  slots.reset(slot);
  slot.key = null;
  slot.conversationId = null;
  // Nothing runs beside this: no busy slot can be lost when the context grows.
  if (!(await fit(s, n, () => {}))) {
    throw new ContextFullError(`the context could not make room for the prompt's ${n} tokens`, {
      promptTokens: n,
      nCtx: s.ctx.nCtx,
    });
  }
  try {
    for (let from = 0; from < n; from += s.stepTokens) {
      if (control.signal?.aborted) throw new AbortError('exportPrompt aborted');
      const part = tokens.subarray(from, Math.min(n, from + s.stepTokens));
      const pos = Array.from(part, (_, k) => from + k);
      const status = await s.llama.guard(() =>
        s.ctx.decode(
          part,
          pos,
          pos.map(() => slot.seq),
          pos.map((p) => p === n - 1),
        ),
      );
      if (status !== 0) throw new EngineError(`llama_decode failed with status ${status}`, 'decode_failed');
      for (const t of part) slot.tokens.push(t);
      control.onProgress?.({ phase: 'prefill', loaded: from + part.length, total: n });
      await yieldToEventLoop();
    }
    const data = await s.llama.guard(() => s.ctx.stateGet(slot.seq));
    await slots.checkpoint(slot);
    slot.lastUsed = Date.now();
    return data;
  } catch (err) {
    if (!s.llama.crashed) slots.reset(slot);
    throw err;
  }
}
