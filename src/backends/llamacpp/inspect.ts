// Seams for tests and benchmarks: what the engine computed and holds, reached as engine.inspect in Node. Not part of
// EngineCore, so never reachable from a page. Requests go through the same cache path and scheduler as a completion.
import { newCompletionMeta } from '../../core/completion.ts';
import { resolveRequest } from '../../core/request.ts';
import type { CallControl, CompletionRequest } from '../../contract.ts';
import type { CacheSource, ChatCompletionCreateParams } from '../../types.ts';
import { Job, type LogitsTrace } from './run/job.ts';
import type { Scheduler } from './run/scheduler.ts';
import type { Session } from './run/session.ts';

export class EngineInspector {
  constructor(private readonly scheduler: Scheduler, private readonly session: () => Session) {}

  /** Decode steps so far and the time they took. */
  get profile(): Readonly<Scheduler['profile']> {
    return this.scheduler.profile;
  }

  /** A completion as EngineCore.complete runs it, with `trace` seeing the logits every token was sampled from. */
  complete(request: CompletionRequest, control: CallControl, trace: LogitsTrace): Promise<void> {
    return this.scheduler.submit(Job.completion(request, control, this.session().info.name, trace));
  }

  /** The next-token logits after the request's prompt (no reply is generated): cached and cold prompts compared. */
  async promptLogits(params: ChatCompletionCreateParams): Promise<{ logits: Float32Array; cached: number; source: CacheSource }> {
    const job = new Job(resolveRequest(params), () => {}, params.signal, newCompletionMeta(''), true);
    await this.scheduler.submit(job);
    return { logits: job.promptLogits!, cached: job.prep.cached, source: job.prep.source };
  }

  /** What the model reads for this request: the rendered prompt, its tokens, and the system prefix the cache keeps. */
  prompt(params: ChatCompletionCreateParams): { text: string; tokens: Int32Array; systemTokens: number } {
    const p = this.session().prompts.prepare(resolveRequest(params));
    return { text: p.text, tokens: p.tokens, systemTokens: p.system?.tokens.length ?? 0 };
  }

  /** Each slot's sequence, the tokens it holds, whether a request runs on it, and the positions its cells hold. */
  slots(): Array<{ seq: number; tokens: number[]; pending: boolean; cells: number }> {
    const s = this.session();
    return s.cache.slots.all.map((slot) => ({
      seq: slot.seq, tokens: [...slot.tokens], pending: slot.pending, cells: s.ctx.seqPosMax(slot.seq) + 1,
    }));
  }
}
