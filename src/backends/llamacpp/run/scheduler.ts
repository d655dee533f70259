// Runs chat completions together (continuous batching), and loads and unloads in order with them. Up to nParallel
// requests hold a slot — one sequence of the context's unified KV cache — and every step decodes, in one
// llama_decode, the next token of each generating request plus prompt chunks of those still reading their prompt.
// Between steps the worker's event loop runs, so new requests, aborts and the consumers of the streams get in.
// Requests beyond nParallel, or beyond what the context can hold next to the running ones, wait in FIFO order.
// Loads and unloads wait in the same queue (exclusive): one runs once every request before it has ended, and the
// requests after it start after it.
//
// The context grows with demand (growth.ts). When it cannot grow further and a reply fills it, the request's
// context_overflow policy applies (overflow.ts).
import { AbortError, ContextFullError, EngineError, InvalidRequestError } from '../../../errors.ts';
import type { Slot } from '../cache/slots.ts';
import { now } from '../../../core/clock.ts';
import { noDraftModel } from '../../../core/speculative.ts';
import { fit, grow, resize } from './growth.ts';
import { Job } from './job.ts';
import { contextFor, DEFAULT_REPLY_BUDGET } from '../cache/kv-layout.ts';
import { GrammarError, Sampler } from '../binding/sampler.ts';
import { overflow } from './overflow.ts';
import { noGuesses, type Session } from './session.ts';
import { yieldToEventLoop } from './yield.ts';
import { isPlaceholder, MediaDecodeError, type MediaSpan } from '../binding/mtmd.ts';
import { ngramDraft } from './ngram.ts';
import { type DraftAsk, draftView } from './draft.ts';

/** A load or unload waiting for its turn. */
interface Exclusive {
  run(): Promise<void>;
}

/** One llama_decode's inputs, and which job each output belongs to. */
class Batch {
  tokens: number[] = [];
  pos: number[] = [];
  seq: number[] = [];
  out: boolean[] = [];
  /** Each job's tokens, and the batch row of the first of its outputs (-1: none). */
  parts: Array<{ job: Job; tokens: ArrayLike<number>; logits: number }> = [];

  get size() {
    return this.tokens.length;
  }

  /** Adds `part` to the job's sequence; its last `outputs` tokens give logits. */
  add(job: Job, part: ArrayLike<number>, outputs: number) {
    const start = job.position(job.slot.tokens.length);
    const first = this.size + part.length - outputs;
    for (let k = 0; k < part.length; k++) {
      this.tokens.push(part[k]!);
      this.pos.push(start + k);
      this.seq.push(job.slot.seq);
      this.out.push(k >= part.length - outputs);
    }
    this.parts.push({ job, tokens: part, logits: outputs ? first : -1 });
  }
}

export class Scheduler {
  private readonly waiting: Array<Job | Exclusive> = [];
  private readonly active: Job[] = [];
  /** Requests finish() ended, for settle() to hand their slots back. */
  private readonly ending: Array<{ s: Session | null; job: Job; err?: unknown }> = [];
  private running = false;
  private wakeUp: (() => void) | null = null;
  /** Decode steps and the time they took (for the batch benchmark's profile); `byTokens`: the decodes of steps of up
   * to 16 tokens and their time, by token count (what a step checking guesses costs against one token's). */
  readonly profile = {
    steps: 0,
    decodeMs: 0,
    sampleMs: 0,
    stepMs: 0,
    mostTokens: 0,
    byTokens: [] as Array<{ steps: number; ms: number }>,
  };

  /** `session()` is the loaded model; it throws when none is loaded. */
  constructor(private readonly session: () => Session) {}

  /** Queues a job; it settles through job.done. */
  submit(job: Job): Promise<void> {
    const reason = job.stopReason();
    if (reason) {
      job.end(reason);
      return job.done;
    }
    this.waiting.push(job);
    job.signal?.addEventListener(
      'abort',
      () => {
        if (this.dequeue(job)) job.end(new AbortError());
        this.wake();
      },
      { once: true },
    );
    this.kick();
    return job.done;
  }

  /**
   * Runs `fn` (a load or unload) once every request and load queued before it has ended; requests queued after it
   * start after it. An abort while it waits rejects at once, and it never runs.
   */
  exclusive<T>(signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
    if (signal?.aborted) return Promise.reject(new AbortError());
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        if (this.dequeue(turn)) reject(new AbortError());
      };
      const turn: Exclusive = {
        run: () => {
          signal?.removeEventListener('abort', onAbort);
          return fn().then(resolve, reject);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(turn);
      this.kick();
    });
  }

  private dequeue(item: Job | Exclusive): boolean {
    const i = this.waiting.indexOf(item);
    if (i >= 0) this.waiting.splice(i, 1);
    return i >= 0;
  }

  private wake() {
    this.wakeUp?.();
    this.wakeUp = null;
  }

  private kick() {
    this.wake();
    if (this.running) return;
    this.running = true;
    void this.loop().finally(() => {
      this.running = false;
      if (this.waiting.length) this.kick();
    });
  }

  private async loop(): Promise<void> {
    for (;;) {
      for (const job of [...this.active]) {
        const reason = job.stopReason();
        if (reason) this.finish(this.loaded(), job, reason);
      }
      await this.settle();
      await this.admit();
      if (!this.active.length) return;
      let progressed = false;
      try {
        progressed = await this.step(this.session());
      } catch (err) {
        // llama.cpp failed (or trapped): every running request gets the error, the engine stays usable.
        for (const job of [...this.active]) this.fail(job, err);
      }
      await this.settle();
      if (progressed) await yieldToEventLoop();
      else await this.idle();
    }
  }

  /** Waits for a consumer to take its chunks, an abort or a new request. */
  private idle(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.wakeUp = resolve;
      for (const job of this.active) job.settled().then(() => this.wake());
    });
  }

  /**
   * Starts waiting requests while there is a free slot and room for them next to the running ones, and a load or
   * unload at the head of the queue once nothing runs.
   */
  private async admit() {
    while (this.waiting.length) {
      const next = this.waiting[0]!;
      if (!(next instanceof Job)) {
        if (this.active.length) return;
        this.waiting.shift();
        await next.run();
        continue;
      }
      if (this.active.length >= this.maxActive()) return;
      let s: Session;
      try {
        s = this.session();
        if (!next.prompt) this.measure(s, next); // once: a request that waits for room keeps its prompt
      } catch (err) {
        this.waiting.shift();
        next.end(err);
        continue;
      }
      const running = this.active.reduce((n, j) => n + Math.max(j.demand, j.slot.tokens.length), 0);
      // Wait for running requests to end when this one does not fit next to them (it fits alone: measure()).
      if (this.active.length && running + next.demand > s.kv.maxCtx) return;
      this.waiting.shift();
      await this.start(s, next, running);
      await this.settle();
    }
  }

  private maxActive(): number {
    return this.loaded()?.nParallel ?? 1; // no model: admit() hands out the error
  }

  /** Renders and tokenizes the prompt, and checks that it can fit the context at all. */
  private measure(s: Session, job: Job) {
    try {
      job.prompt = s.prompts.prepare(job.req);
    } catch (err) {
      if (!(err instanceof MediaDecodeError)) throw err;
      const kind = job.req.media?.[err.index]?.kind ?? 'image';
      throw new InvalidRequestError(`messages: ${err.message}`, kind === 'image' ? 'invalid_image' : 'invalid_audio', {
        param: 'messages',
      });
    }
    const n = job.tokens.length;
    const spans = job.prompt.media?.spans ?? [];
    if (spans.length && spans[spans.length - 1]!.end === n) {
      throw new InvalidRequestError(
        'messages: the prompt ends with an image or audio clip; the chat template must put text after it',
        'invalid_parameter',
        { param: 'messages' },
      );
    }
    const limit = s.kv.maxCtx;
    if (n + 1 > limit) {
      throw new ContextFullError(
        `the prompt is ${n} tokens but the context holds at most ${limit}: shorten the conversation` +
          (s.kv.dynamic ? ' or raise kvBudgetBytes' : ' or load the model with a larger nCtx'),
        { promptTokens: n, nCtx: limit },
      );
    }
    job.demand = Math.min(limit, n + (job.req.maxTokens ?? DEFAULT_REPLY_BUDGET));
    job.speculative = job.req.speculative === undefined ? s.speculative : job.req.speculative;
    if (job.speculative && !s.canRollBack) {
      throw new InvalidRequestError(
        `speculative: ${noGuesses(s.info.memory.kind)}: leave speculative out for this model`,
        'unsupported_by_backend',
        { param: 'speculative' },
      );
    }
    if (job.speculative?.kind === 'draft' && !s.draft) noDraftModel('speculative');
  }

  private async start(s: Session, job: Job, running: number) {
    job.tStart = now();
    try {
      if (s.kv.dynamic) {
        const want = contextFor(running + job.demand, s.kv);
        if (want > s.ctx.nCtx) await resize(s, want, job.tokens.length, this.lost);
      }
      job.prep = await s.cache.prepare(job.prompt!);
      // Cells end inside an image only if two images' placeholders began alike: read that image again.
      const cut = job.prompt!.media?.spans.find((m) => m.start < job.prep.cached && job.prep.cached < m.end);
      if (cut) job.prep.cached = await s.cache.slots.trim(job.slot, cut.start);
      if (job.prep.warning) job.warnings.push(job.prep.warning);
      // Saves run after their answer is delivered: what storage being full did to them is said in the next answer.
      job.warnings.push(...s.cache.takeSaveWarnings());
    } catch (err) {
      job.end(err);
      return;
    }
    job.phase = 'prefill';
    this.active.push(job);
    try {
      // Aborted while the cache was read: it ends now. (Left for the next loop, the step that comes first decoded it
      // with the others and then had no sampler for it — a TypeError that failed every running request.)
      const reason = job.stopReason();
      if (reason) return this.finish(s, job, reason);
      s.cache.slots.makeRoom(job.demand - job.prep.cached, job.slot);
      job.sampler = s.llama.guard(() => newSampler(s, job));
      // Penalties look back over the prompt too (as llama.cpp's own tools do); media placeholders are no tokens.
      for (const t of job.tokens.subarray(Math.max(0, job.tokens.length - job.req.sampler.repeatLastN))) {
        if (!isPlaceholder(t)) job.sampler.accept(t);
      }
    } catch (err) {
      this.fail(job, err);
    }
  }

  /** One decode step. Returns false when there was nothing to decode (every running request waits for its consumer). */
  private async step(s: Session): Promise<boolean> {
    // An image or audio clip next in a prompt is encoded and decoded on its own (seconds of work, one request at a
    // time).
    for (const job of this.active) {
      const span =
        job.phase === 'prefill' ? job.prompt!.media?.spans.find((m) => m.start === job.slot.tokens.length) : undefined;
      if (span) return this.mediaStep(s, job, span);
    }
    const t0 = now();
    const batch = new Batch();
    const generating = this.active.filter((j) => j.phase === 'generate' && !j.blocked);
    const guesses = await this.guesses(s, generating);
    for (const [i, job] of generating.entries()) batch.add(job, [job.next, ...guesses[i]!], 1 + guesses[i]!.length);
    for (const job of this.active) {
      const room = s.stepTokens - batch.size;
      if (job.phase !== 'prefill' || room <= 0) continue;
      const from = job.slot.tokens.length;
      let end = Math.min(from + room, job.tokens.length);
      // A chunk ends where a state is to be kept as decoded (the slot must hold exactly those tokens then), and where
      // media begins.
      for (const cut of checkpointsAt(s, job)) if (from < cut && cut < end) end = cut;
      for (const m of job.prompt!.media?.spans ?? []) if (from < m.start && m.start < end) end = m.start;
      batch.add(job, job.tokens.subarray(from, end), end === job.tokens.length ? 1 : 0);
    }
    if (!batch.size) return false;
    if (!(await fit(s, batch.size, this.lost))) {
      overflow(s, this.active, this.endOverflowed);
      return true;
    }
    // Growing the context can fail a request whose cells did not move: build the batch again without it.
    if (batch.parts.some((p) => !this.active.includes(p.job))) return true;
    const t1 = now();
    const status = await s.llama.guard(() => s.ctx.decode(batch.tokens, batch.pos, batch.seq, batch.out));
    const t2 = now();
    if (status === 1) {
      // No contiguous room although the count fits (cells are fragmented): free or grow, else overflow.
      if (!s.cache.slots.evictOne() && !(await grow(s, s.ctx.nCtx + 1, this.lost))) {
        overflow(s, this.active, this.endOverflowed);
      }
      return true;
    }
    if (status !== 0) throw new EngineError(`llama_decode failed with status ${status}`, 'decode_failed');
    for (const { job, tokens } of batch.parts) {
      for (let k = 0; k < tokens.length; k++) job.slot.tokens.push(tokens[k]!);
    }
    await this.draftReads(s, batch);
    for (const { job, tokens, logits } of batch.parts) {
      if (job.phase === 'prefill') await this.prefilled(s, job, logits);
      else if (this.verify(s, job, tokens, logits)) this.finish(s, job);
    }
    const t3 = now();
    const p = this.profile;
    p.steps++;
    p.decodeMs += t2 - t1;
    if (batch.size <= 16) {
      const by = (p.byTokens[batch.size] ??= { steps: 0, ms: 0 });
      by.steps++;
      by.ms += t2 - t1;
    }
    p.mostTokens = Math.max(p.mostTokens, batch.size);
    p.sampleMs += t3 - t2;
    p.stepMs += t3 - t0;
    return true;
  }

  /**
   * Speculative decoding's guesses for each generating job's next step, in order: at most what the batch has room for
   * after the jobs before it, and what its budget leaves.
   */
  private async guesses(s: Session, generating: Job[]): Promise<number[][]> {
    const out = generating.map((): number[] => []);
    const asks: DraftAsk[] = [];
    const asked: number[] = [];
    let used = 0;
    for (const [i, job] of generating.entries()) {
      const n = this.budget(s, job, s.stepTokens - used - 1);
      used += 1 + Math.max(0, n); // n < 0: a reply already past its demand takes its one token
      if (n <= 0) continue;
      if (job.speculative!.kind === 'ngram') out[i] = this.ngram(job, n);
      else {
        asks.push({
          seq: job.slot.seq,
          tokens: draftView(job.slot.tokens, job.next, !!job.prompt!.media),
          n,
          spec: job.speculative!,
        });
        asked.push(i);
      }
    }
    if (!asks.length) return out;
    const drafted = await s.llama.guard(() => s.draft!.guess(asks, s.stepTokens));
    for (const [k, i] of asked.entries()) out[i] = drafted[k]!;
    return out;
  }

  /**
   * The draft model reads the prompt chunks the step read, so that it has read a prompt by its first token. As much as
   * the model read for each request, no more: a conversation restored from IndexedDB, which the draft reads again, does
   * not wait for it before its first token (the draft reads the rest beside the reply: guesses() then).
   */
  private async draftReads(s: Session, batch: Batch) {
    if (!s.draft) return;
    const asks: DraftAsk[] = [];
    for (const { job, tokens } of batch.parts) {
      if (job.phase !== 'prefill' || job.speculative?.kind !== 'draft') continue;
      const view = draftView(job.slot.tokens, null, !!job.prompt!.media);
      asks.push({ seq: job.slot.seq, tokens: view, n: 0, spec: job.speculative, max: tokens.length });
    }
    if (asks.length) await s.llama.guard(() => s.draft!.follow(asks, s.stepTokens));
  }

  /** How many guesses the job's next step may check: at most `room` (the batch's) and what its budget leaves. */
  private budget(s: Session, job: Job, room: number): number {
    const spec = job.speculative;
    if (!spec) return 0;
    return Math.min(
      room,
      spec.nDraft,
      job.demand - job.slot.tokens.length - 1,
      job.req.maxTokens === null ? Infinity : job.req.maxTokens - job.n - 1,
      s.ctx.nCtx - s.cache.slots.used() - 1,
    );
  }

  /** Up to `n` guesses from the conversation itself (ngram.ts). */
  private ngram(job: Job, n: number): number[] {
    const history = job.slot.tokens;
    history.push(job.next); // looked up with the token this step decodes, then taken off again
    try {
      return ngramDraft(history, n);
    } finally {
      history.pop();
    }
  }

  /**
   * After a generating step: samples at each of the job's outputs in turn while the guess there is what it samples
   * (llama.cpp's rule: each token is the model's own sample, so the reply is the one it writes without guesses), and
   * drops the cells of the guesses after the first it did not take. Returns true when the reply ended.
   */
  private verify(s: Session, job: Job, tokens: ArrayLike<number>, logits: number): boolean {
    const guessed = tokens.length - 1;
    // Output k checks guess k + 1. The slot keeps the guesses before the first miss, or before the token that ended
    // the reply (a last token is never decoded); a guess of that token counts as taken.
    let k = 0;
    let ended = false;
    for (; ; k++) {
      ended = job.sampleNext(s, logits + k);
      const hit = k < guessed && job.sampled === tokens[k + 1];
      if (ended || !hit) {
        if (guessed) job.countGuesses(guessed, k + (hit ? 1 : 0));
        break;
      }
    }
    if (guessed) {
      const slot = job.slot;
      const dropped = guessed - k;
      if (dropped && !s.ctx.seqRm(slot.seq, job.position(slot.tokens.length - dropped))) {
        throw new EngineError('llama.cpp could not drop the rejected guesses of speculative decoding', 'decode_failed');
      }
      slot.tokens.length -= dropped;
    }
    return ended;
  }

  /**
   * Encodes one image or audio chunk of a prompt and decodes its embeddings into the request's sequence; the slot then
   * holds its placeholders. A failure ends that request only.
   */
  private async mediaStep(s: Session, job: Job, span: MediaSpan): Promise<boolean> {
    const n = span.end - span.start;
    if (!(await fit(s, n, this.lost))) {
      overflow(s, this.active, this.endOverflowed);
      return true;
    }
    if (!this.active.includes(job)) return true;
    const projector = s.projector!;
    const t0 = now();
    try {
      const embd = await s.llama.guard(() => projector.encode(s.ctx, span));
      if (!embd) {
        throw new EngineError(
          `the projector could not encode ${span.kind === 'image' ? 'an image' : 'an audio clip'} of this request`,
          'media_encode_failed',
        );
      }
      job.mediaMs += now() - t0;
      const pos = job.position(span.start);
      const status = await s.llama.guard(() => projector.decode(s.ctx, span, embd, job.slot.seq, pos));
      if (status === 1) {
        // No contiguous room: drop what went in of it, free or grow and try again (the encoder runs again), else
        // overflow.
        s.ctx.seqRm(job.slot.seq, pos);
        if (!s.cache.slots.evictOne() && !(await grow(s, s.ctx.nCtx + n, this.lost))) {
          overflow(s, this.active, this.endOverflowed);
        }
        return true;
      }
      if (status !== 0) {
        throw new EngineError(`llama_decode failed with status ${status} on a media chunk`, 'decode_failed');
      }
    } catch (err) {
      this.fail(job, err);
      return true;
    }
    for (let k = span.start; k < span.end; k++) job.slot.tokens.push(job.tokens[k]!);
    await this.prefilled(s, job, -1);
    return true;
  }

  /** After a prompt chunk: progress, the system prompt's state, and at the prompt's end the first token. */
  private async prefilled(s: Session, job: Job, logits: number) {
    const pos = job.slot.tokens.length;
    const build = job.prep.buildSystem;
    if (build && pos === build.tokens.length) await s.cache.captureSystem(job.slot, build);
    if (!s.canRollBack && checkpointsAt(s, job).includes(pos)) await s.cache.checkpoint(job.slot);
    job.req.onProgress?.({
      phase: 'prefill',
      loaded: pos - job.prep.cached,
      total: job.tokens.length - job.prep.cached,
    });
    if (logits >= 0 && job.replyFrom(s, logits)) this.finish(s, job);
  }

  /** Running requests whose cells llama.cpp refused to take into a resized context cannot go on. */
  private readonly lost = (slots: Slot[]) => {
    for (const job of this.active.filter((j) => slots.includes(j.slot))) {
      this.fail(
        job,
        new EngineError(
          'the KV cells of this request could not be moved into the resized context',
          'context_resize_failed',
          { nCtx: this.session().ctx.nCtx },
        ),
      );
    }
  };

  /** A reply the full context ended (overflow.ts): with its error, or with finish_reason 'length'. */
  private readonly endOverflowed = (job: Job, error?: unknown) => {
    if (error !== undefined) return this.fail(job, error);
    job.finish = 'length';
    this.finish(this.session(), job);
  };

  private fail(job: Job, err: unknown) {
    this.finish(this.loaded(), job, err);
  }

  /** The loaded model, or null (none, or its module crashed). */
  private loaded(): Session | null {
    try {
      return this.session();
    } catch {
      return null;
    }
  }

  /**
   * Ends a running request: it leaves the running set now; its final chunk (when it completed), its sampler and its
   * slot go back at the loop's next settle(). Giving the slot back exports its cells (cache.release), which in the
   * GPU build waits for the GPU: that must not start in the middle of a step, where other calls into llama.cpp follow.
   */
  private finish(s: Session | null, job: Job, err?: unknown) {
    const i = this.active.indexOf(job);
    if (i >= 0) this.active.splice(i, 1);
    this.ending.push({ s, job, err });
  }

  /** Ends the requests finish() took out of the running set, in order. */
  private async settle() {
    for (let e = this.ending.shift(); e; e = this.ending.shift()) {
      const { s, job, err } = e;
      const reply = err === undefined ? job.complete() : null;
      let error = err;
      if (s) {
        job.sampler?.free();
        try {
          await s.cache.release(job.slot, job.prompt!, { reply, error: err, shiftedAt: job.shiftedAt });
        } catch (releaseErr) {
          error ??= releaseErr;
        }
      }
      job.sampler = null;
      job.end(error);
    }
  }
}

/**
 * The request's sampler, with its grammar; a grammar llama.cpp refuses fails the request before it generates. A reply
 * that continues a prefix has the grammar take the prefix first: one it does not allow fails the request.
 */
function newSampler(s: Session, job: Job): Sampler {
  const { grammar, grammarParam, prefix } = job.prompt!.output;
  const param = grammarParam ?? 'grammar';
  let sampler: Sampler;
  try {
    sampler = new Sampler(s.model, job.req.sampler, grammar);
  } catch (err) {
    if (!(err instanceof GrammarError)) throw err;
    throw new InvalidRequestError(`${param}: ${err.message}`, 'invalid_grammar', { param });
  }
  if (!grammar || !prefix) return sampler;
  for (const t of s.model.tokenize(prefix, false, false)) {
    const one = new Int32Array([t]);
    // Checked before it is taken: llama.cpp's grammar aborts on a token it does not allow.
    if (!sampler.grammarAllows(one)[0]) {
      sampler.free();
      throw new InvalidRequestError(
        `messages: the assistant prefix does not follow the ${param === 'grammar' ? 'grammar' : 'response format'}: ${JSON.stringify(prefix.slice(0, 80))}`,
        'invalid_prefix',
        { param: 'messages' },
      );
    }
    sampler.grammarAllows(one, t);
  }
  return sampler;
}

/**
 * Token counts where a prompt's state is kept: the end of a system prompt to cache; for memory that cannot roll back
 * also the end of the system prefix, the ends of the last messages (an edit of a later one goes back there) and the
 * token before the prompt's last (a regenerated answer goes back there: the last prompt token is always decoded
 * again).
 */
function checkpointsAt(s: Session, job: Job): number[] {
  const at = [job.prep.buildSystem?.tokens.length ?? -1];
  if (!s.canRollBack) {
    at.push(job.prompt!.system?.tokens.length ?? -1, ...job.prompt!.messageEnds, job.tokens.length - 1);
  }
  return at;
}
