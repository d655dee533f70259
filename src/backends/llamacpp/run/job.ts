// One chat completion as the scheduler runs it: its prompt and slot, its sampler, what it has streamed so far and
// how it ends. The scheduler decodes; the job turns sampled tokens into chunks.
import { type CompletionMeta, newCompletionMeta } from '../../../core/chat/completion.ts';
import type { CallControl, CompletionRequest, ResolvedRequest, Speculative } from '../../../contract.ts';
import { AbortError } from '../../../errors.ts';
import type { ChatCompletionChunk, ChatMessage, FinishReason, TokenLogprob } from '../../../types.ts';
import type { Prepared } from '../cache/prompt-cache.ts';
import { now } from '../../../core/clock.ts';
import { Detokenizer } from './detokenizer.ts';
import { type ReplyOptions, ReplyWriter } from '../../../core/chat/reply.ts';
import type { LlamaModel } from '../binding/model.ts';
import { logprobs, type Sampler, type TokenLogprobs } from '../binding/sampler.ts';
import type { PreparedPrompt } from './prompt.ts';
import { positionAt } from '../binding/mtmd.ts';
import type { Session } from './session.ts';
import { StopMatcher } from '../../../core/chat/stop.ts';

export type ChunkSink = (c: ChatCompletionChunk) => void | Promise<void>;

export class Job {
  phase: 'queued' | 'prefill' | 'generate' | 'done' = 'queued';
  /** The rendered, tokenized prompt (set once the request is first considered for a slot). */
  prompt: PreparedPrompt | null = null;
  prep!: Prepared;
  /** Cells this request was admitted with: its prompt plus the reply it may write. */
  demand = 0;
  sampler: Sampler | null = null;
  /** The sampled token the next step decodes. */
  next = -1;
  /** Prompt position where a context shift cut the slot (its cells past it no longer match a cold decode). */
  shiftedAt: number | null = null;
  tStart = 0;
  tPrompt = 0;
  /** Time spent encoding images and audio (part of the prompt's time). */
  mediaMs = 0;
  tFirst = 0;
  n = 0;
  /** The token sampleNext sampled last (whether or not it ended the reply). */
  sampled = -1;
  /** Speculative decoding for this request (null: off), and the guesses it checked and kept so far. */
  speculative: Speculative | null = null;
  private guessed = 0;
  private guessesKept = 0;
  finish: FinishReason = 'stop';
  private detok: Detokenizer | null = null;
  /** The reply as chunks: text cut into reasoning, content and tool calls, with its log-probabilities. */
  private reply: ReplyWriter | null = null;
  private model: LlamaModel | null = null;
  private readonly stops: StopMatcher;
  /** Chunks handed to the sink and not yet taken: while one is pending the job skips steps. The sink says when it
   * has room (a stream's buffer, or the window of chunks crossing to the page: rpc/flow.ts). */
  private sent: Promise<void> = Promise.resolve();
  private sending = 0;
  private failed: unknown = null;
  readonly done: Promise<void>;
  private settle!: { resolve: () => void; reject: (err: unknown) => void };

  constructor(
    readonly req: ResolvedRequest,
    private readonly sink: ChunkSink,
    readonly signal: AbortSignal | undefined,
    private readonly meta: CompletionMeta,
  ) {
    this.stops = new StopMatcher(req.stop);
    this.done = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
    this.done.catch(() => {});
  }

  /** A completion's job: chunks to control.onChunk, progress to control.onProgress. */
  static completion(request: CompletionRequest, control: CallControl, model: string): Job {
    return new Job(
      { ...request, onProgress: control.onProgress },
      control.onChunk ?? (() => {}),
      control.signal,
      newCompletionMeta(model),
    );
  }

  get slot() {
    return this.prep.slot;
  }

  get tokens(): Int32Array {
    return this.prompt!.tokens;
  }

  /**
   * The position of the slot's token at index `n` (the next one's when n is its length). Its index, unless the prompt
   * holds media: only then can the slot hold placeholders that take no position (positionAt, which scans them: each
   * step of every request asks).
   */
  position(n: number): number {
    return this.prompt!.media ? positionAt(this.slot.tokens, n) : n;
  }

  /** True while the consumer has not taken the last chunks: decoding more would only pile them up. */
  get blocked(): boolean {
    return this.sending > 0;
  }

  /** Settles when the consumer has taken every chunk handed to it so far. */
  settled(): Promise<void> {
    return this.sent;
  }

  /** The prompt is in the slot, its logits at batch row `logits`: the reply opens with its first token. Returns
   * true when the reply has already ended. */
  replyFrom(s: Session, logits: number): boolean {
    this.startReply(s.model);
    return this.sampleNext(s, logits);
  }

  /** Samples the next token from the logits at batch row `logits`. Returns true when the reply ended. */
  sampleNext(s: Session, logits: number): boolean {
    const token = this.sampleToken(s, logits);
    this.sampled = token;
    const lp =
      this.req.logprobs !== null ? s.llama.guard(() => logprobs(s.ctx, logits, token, this.req.logprobs!)) : undefined;
    return this.take(token, s.model.eogTokens.has(token), lp);
  }

  /** A step checked `guessed` guesses and the model took `kept` of them. */
  countGuesses(guessed: number, kept: number) {
    this.guessed += guessed;
    this.guessesKept += kept;
  }

  protected sampleToken(s: Session, logits: number): number {
    return s.llama.guard(() => this.sampler!.sample(s.ctx, logits));
  }

  /** The role chunk opens the stream. */
  private startReply(model: LlamaModel) {
    this.phase = 'generate';
    this.tPrompt = now();
    this.model = model;
    const { preserved, parse } = this.prompt!.output;
    // The format's markers are read as text even where they are special tokens (harmony's <|channel|>, …).
    this.detok = new Detokenizer((t) => model.tokenBytes(t, preserved.has(t)));
    this.reply = this.writer(parse);
    this.emit(this.reply.open());
  }

  /**
   * Takes a sampled token. Returns true when the reply ended (end-of-generation token, stop string, max_tokens);
   * otherwise the token is the next one to decode.
   */
  private take(token: number, isEog: boolean, lp?: TokenLogprobs): boolean {
    if (this.n === 0 && !this.tFirst) this.tFirst = now();
    if (isEog) return true;
    this.n++;
    if (lp) this.reply!.logprob(this.tokenLogprob(token, lp));
    const { emit: piece, stopped } = this.stops.push(this.detok!.push(token));
    this.emitText(piece);
    if (stopped) {
      this.detok = null; // the stop string ended the text: nothing held back is shown
      return true;
    }
    if (this.req.maxTokens !== null && this.n >= this.req.maxTokens) {
      this.finish = 'length';
      return true;
    }
    this.next = token;
    return false;
  }

  /** Told to the caller on the final chunk. */
  readonly warnings: string[] = [];

  /** The final chunk (flushing held-back text), with usage and timings. Returns the reply as the assistant message
   * a client sends back next turn (null: there is none to keep). */
  complete(): ChatMessage | null {
    if (this.detok) {
      const tail = this.stops.push(this.detok.flush());
      this.emitText(tail.emit + (tail.stopped ? '' : this.stops.flush()));
    }
    const tEnd = now();
    const promptTokens = this.tokens.length;
    const cached = this.prep.cached;
    // A reply the full context ended before its first token has no writer yet.
    const { chunk, message } = (this.reply ?? this.writer(null)).close(this.finish, {
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: this.n,
        total_tokens: promptTokens + this.n,
        prompt_tokens_details: { cached_tokens: cached },
        ...(this.speculative
          ? {
              completion_tokens_details: {
                accepted_prediction_tokens: this.guessesKept,
                rejected_prediction_tokens: this.guessed - this.guessesKept,
              },
            }
          : {}),
      },
      timings: {
        prompt_n: promptTokens - cached,
        prompt_ms: round(this.tPrompt - this.tStart),
        predicted_n: this.n,
        predicted_ms: round(tEnd - (this.tFirst || this.tPrompt)),
        cache_n: cached,
        cache_source: this.prep.source,
        ...(this.prompt!.media ? { media_ms: round(this.mediaMs) } : {}),
        ...(this.speculative ? { draft_n: this.guessed, draft_n_accepted: this.guessesKept } : {}),
      },
      warnings: this.warnings,
    });
    this.finish = chunk.choices[0]!.finish_reason!;
    this.emit(chunk);
    return message;
  }

  /** Resolves the request once the consumer has every chunk; or rejects it. */
  end(err?: unknown) {
    this.phase = 'done';
    this.prompt?.media?.free();
    if (err !== undefined) this.settle.reject(err);
    else this.sent.then(() => (this.failed ? this.settle.reject(this.failed) : this.settle.resolve()));
  }

  /** Why the job must stop now, if it must: an abort, or a consumer that failed. */
  stopReason(): unknown {
    if (this.failed) return this.failed;
    return this.signal?.aborted ? new AbortError() : null;
  }

  private writer(parse: ReplyOptions['parse']): ReplyWriter {
    return new ReplyWriter(this.meta, {
      parse,
      logprobs: this.req.logprobs !== null,
      parallelToolCalls: this.req.parallelToolCalls,
    });
  }

  private emitText(piece: string) {
    const c = this.reply!.push(piece);
    if (c) this.emit(c);
  }

  private tokenLogprob(token: number, lp: TokenLogprobs): TokenLogprob {
    const entry = (t: number, logprob: number) => {
      const bytes = this.model!.tokenBytes(t, true);
      return { token: tokenText.decode(bytes), logprob, bytes: Array.from(bytes) };
    };
    return { ...entry(token, lp.logprob), top_logprobs: lp.top.map((e) => entry(e.token, e.logprob)) };
  }

  private emit(c: ChatCompletionChunk) {
    this.sending++;
    this.sent = this.sent
      .then(() => this.sink(c))
      .then(
        () => void this.sending--,
        (err) => {
          this.sending--;
          this.failed ??= err;
        },
      );
  }
}

/** Decodes one token's bytes on their own (a piece of a character becomes U+FFFD, as OpenAI's tokens do). */
const tokenText = new TextDecoder();

const round = (ms: number) => Math.round(ms * 100) / 100;
