// Seams for tests and benchmarks: what the engine computed and holds. Never part of a shipped bundle — nothing in
// src/ imports it (test/helpers.ts and bench/ do) — and never reachable from a page. Its requests go through the same
// cache path and scheduler as a completion; what it watches, it watches from Job subclasses.
import { newCompletionMeta } from '../../core/chat/completion.ts';
import { resolveMedia } from '../../core/chat/media.ts';
import { resolveRequest } from '../../core/chat/request.ts';
import type { CallControl, CompletionRequest } from '../../contract.ts';
import type { CacheSource, ChatCompletionCreateParams, ChatMessage } from '../../types.ts';
import type { LlamaEngine } from './llama-engine.ts';
import { Job } from './run/job.ts';
import type { Scheduler } from './run/scheduler.ts';
import type { Session } from './run/session.ts';

/** What a test can watch: the logits each token was sampled from. */
export type LogitsTrace = (step: { token: number; logits: Float32Array }) => void;

/** A completion whose every sampled token is reported with the logits it was sampled from. */
class TracedJob extends Job {
  constructor(
    request: CompletionRequest,
    control: CallControl,
    model: string,
    private readonly trace: LogitsTrace,
  ) {
    super(
      { ...request, onProgress: control.onProgress },
      control.onChunk ?? (() => {}),
      control.signal,
      newCompletionMeta(model),
    );
  }

  protected override sampleToken(s: Session, logits: number): number {
    const row = s.ctx.logits(logits);
    const token = super.sampleToken(s, logits);
    this.trace({ token, logits: row });
    return token;
  }
}

/** A request that stops after its prompt, keeping the logits of the next token (no reply is written or kept). */
class PromptLogitsJob extends Job {
  logits: Float32Array | null = null;

  override replyFrom(s: Session, logits: number): boolean {
    this.logits = s.ctx.logits(logits);
    return true;
  }

  override complete(): ChatMessage | null {
    return null;
  }
}

export class TestHooks {
  constructor(private readonly engine: LlamaEngine) {}

  private get scheduler(): Scheduler {
    return this.engine.scheduler;
  }

  private session(): Session {
    return this.engine.requireSession();
  }

  /** Decode steps so far and the time they took. */
  get profile(): Readonly<Scheduler['profile']> {
    return this.scheduler.profile;
  }

  /** What the draft model (LoadOptions.draft) decoded so far: decodes, tokens read, tokens guessed, the time its
   * guesses took; null without one. */
  get draftProfile(): Readonly<{ decodes: number; read: number; guessed: number; ms: number }> | null {
    return this.session().draft?.profile ?? null;
  }

  /** A completion as the engine's complete() runs it, with `trace` seeing the logits every token was sampled from. */
  complete(request: CompletionRequest, control: CallControl, trace: LogitsTrace): Promise<void> {
    return this.scheduler.submit(new TracedJob(request, control, this.session().info.name, trace));
  }

  /** The next-token logits after the request's prompt (no reply is generated): cached and cold prompts compared. */
  async promptLogits(
    params: ChatCompletionCreateParams,
  ): Promise<{ logits: Float32Array; cached: number; source: CacheSource }> {
    const p = this.session().projector;
    const req = await resolveMedia(resolveRequest(params), p && { image: p.image, audio: p.audio }, {});
    const job = new PromptLogitsJob({ ...req, onProgress: undefined }, () => {}, params.signal, newCompletionMeta(''));
    await this.scheduler.submit(job);
    return { logits: job.logits!, cached: job.prep.cached, source: job.prep.source };
  }

  /** What the model reads for this request: the rendered prompt, its tokens, and the system prefix the cache keeps. */
  prompt(params: ChatCompletionCreateParams): {
    text: string;
    tokens: Int32Array;
    systemTokens: number;
    messageEnds: number[];
  } {
    const p = this.session().prompts.prepare(resolveRequest(params));
    return { text: p.text, tokens: p.tokens, systemTokens: p.system?.tokens.length ?? 0, messageEnds: p.messageEnds };
  }

  /** Each slot's sequence, the tokens it holds, whether a request runs on it, and the positions its cells hold. */
  slots(): Array<{ seq: number; tokens: number[]; pending: boolean; cells: number }> {
    const s = this.session();
    return s.cache.slots.all.map((slot) => ({
      seq: slot.seq,
      tokens: [...slot.tokens],
      pending: slot.pending,
      cells: s.ctx.seqPosMax(slot.seq) + 1,
    }));
  }
}
