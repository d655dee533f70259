// Runs chat completions together (continuous batching). Up to nParallel requests hold a slot — one sequence of the
// context's unified KV cache — and every step decodes, in one llama_decode, the next token of each generating
// request plus prompt chunks of those still reading their prompt. Between steps the worker's event loop runs, so
// new requests, aborts and the consumers of the streams get in. Requests beyond nParallel, or beyond what the
// context can hold next to the running ones, wait in FIFO order.
//
// The context grows with demand (kv-layout.ts): when admitted requests need more cells than it has, it is
// recreated larger and every slot's cells are carried over as state (no recompute). When it cannot grow further
// and a reply fills it, the request's context_overflow policy applies: stop, error, or shift (drop the oldest
// tokens after n_keep and move the rest down).
import { AbortError, ContextFullError, EngineError } from '../errors.ts';
import type { ModelInfo } from '../types.ts';
import { commonPrefix } from './cache/prefix.ts';
import type { CacheRequest, PromptCache, Slot } from './cache/prompt-cache.ts';
import type { ChatTemplate } from './chat/template.ts';
import { now } from './clock.ts';
import { Job } from './job.ts';
import { contextFor, DEFAULT_REPLY_BUDGET, type ContextPlan } from './kv-layout.ts';
import { LlamaContext, type LlamaModel, Sampler } from './llama/binding.ts';
import { yieldToEventLoop } from './yield.ts';

/** Tokens one llama_decode takes at most (n_batch). */
export const N_BATCH = 512;

export interface Loaded {
  model: LlamaModel;
  ctx: LlamaContext;
  plan: ContextPlan;
  nParallel: number;
  template: ChatTemplate;
  bosText: string;
  eog: Set<number>;
  info: ModelInfo;
  cache: PromptCache;
  /** Model fingerprint, llama.cpp build and KV layout: saved state is only restored into the same. */
  layout: string;
  templateHash: string;
}

export interface SchedulerEnv {
  loaded(): Loaded;
  /** Runs a call into wasm, turning a trap into a typed error (and forgetting the broken module). */
  guard<T>(fn: () => T): T;
  /** The request's prompt tokens, what the cache matches them by, and the tokens a context shift keeps. */
  render(l: Loaded, job: Job): CacheRequest & { keep: number };
}

/** One llama_decode's inputs, and which job each output belongs to. */
class Batch {
  tokens: number[] = [];
  pos: number[] = [];
  seq: number[] = [];
  out: boolean[] = [];
  parts: Array<{ job: Job; tokens: ArrayLike<number>; logits: number }> = [];

  get size() {
    return this.tokens.length;
  }

  add(job: Job, part: ArrayLike<number>, logitsLast: boolean) {
    const start = job.slot.tokens.length;
    for (let k = 0; k < part.length; k++) {
      this.tokens.push(part[k]!);
      this.pos.push(start + k);
      this.seq.push(job.slot.seq);
      this.out.push(logitsLast && k === part.length - 1);
    }
    this.parts.push({ job, tokens: part, logits: logitsLast ? this.size - 1 : -1 });
  }
}

export class Scheduler {
  private readonly waiting: Job[] = [];
  private readonly active: Job[] = [];
  /** The request being started (its cache lookup may read IndexedDB): neither waiting nor active yet. */
  private starting: Job | null = null;
  private running = false;
  private wakeUp: (() => void) | null = null;
  /** Loads and unloads waiting for the requests before them: requests after them wait in turn. */
  private holds = 0;
  /** Decode steps and the time they took (for the batch benchmark's profile). */
  readonly profile = { steps: 0, decodeMs: 0, sampleMs: 0, stepMs: 0 };

  constructor(private readonly env: SchedulerEnv) {}

  /** Queues a job; it settles through job.done. */
  submit(job: Job): Promise<void> {
    const reason = job.stopReason();
    if (reason) {
      job.end(reason);
      return job.done;
    }
    job.held = this.holds > 0;
    this.waiting.push(job);
    job.signal?.addEventListener('abort', () => {
      const i = this.waiting.indexOf(job);
      if (i >= 0) {
        this.waiting.splice(i, 1);
        job.end(new AbortError());
      }
      this.wake();
    }, { once: true });
    this.kick();
    return job.done;
  }

  /**
   * Stops admitting requests queued from now on and resolves when every request queued before has ended; call
   * release() after. Loads and unloads run in between.
   */
  hold(): Promise<void> {
    this.holds++;
    // Requests held by an earlier load run after this one too: waiting for them would wait forever.
    const before = [...this.active, ...(this.starting ? [this.starting] : []), ...this.waiting.filter((j) => !j.held)]
      .map((j) => j.done.catch(() => {}));
    return Promise.all(before).then(() => {});
  }

  release() {
    this.holds--;
    if (this.holds === 0) for (const j of this.waiting) j.held = false;
    this.kick();
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
      if (this.admissible()) this.kick();
    });
  }

  private admissible(): boolean {
    const next = this.waiting[0];
    return !!next && !next.held;
  }

  private async loop(): Promise<void> {
    for (;;) {
      for (const job of [...this.active]) {
        const reason = job.stopReason();
        if (reason) this.finish(this.safeLoaded(), job, reason);
      }
      await this.admit();
      if (!this.active.length) return;
      let progressed = false;
      try {
        progressed = this.step(this.env.loaded());
      } catch (err) {
        // llama.cpp failed (or trapped): every running request gets the error, the engine stays usable.
        for (const job of [...this.active]) this.fail(job, err);
      }
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

  /** Starts waiting requests while there is a free slot and room for them next to the running ones. */
  private async admit() {
    while (this.active.length < this.maxActive() && this.admissible()) {
      const job = this.waiting[0]!;
      let l: Loaded;
      try {
        l = this.env.loaded();
        if (!job.tokens.length) this.measure(l, job); // once: a request that waits for room keeps its tokens
      } catch (err) {
        this.waiting.shift();
        job.end(err);
        continue;
      }
      const running = this.active.reduce((n, j) => n + Math.max(j.demand, j.slot.tokens.length), 0);
      // Wait for running requests to end when this one does not fit next to them (it fits alone: measure()).
      if (this.active.length && running + job.demand > l.plan.maxCtx) return;
      this.waiting.shift();
      this.starting = job;
      try {
        await this.start(l, job, running);
      } finally {
        this.starting = null;
      }
    }
  }

  private maxActive(): number {
    try {
      return this.env.loaded().nParallel;
    } catch {
      return 1; // no model: admit() hands out the error
    }
  }

  /** Tokenizes the prompt and checks that it can fit the context at all. */
  private measure(l: Loaded, job: Job) {
    const { keep, ...cacheReq } = this.env.render(l, job);
    job.cacheReq = cacheReq;
    job.keep = keep;
    job.tokens = job.cacheReq.tokens;
    const n = job.tokens.length;
    const limit = l.plan.maxCtx;
    if (n + 1 > limit) {
      throw new ContextFullError(
        `the prompt is ${n} tokens but the context holds at most ${limit}: shorten the conversation` +
        (l.plan.dynamic ? ' or raise kvBudgetBytes' : ' or load the model with a larger nCtx'),
        { promptTokens: n, nCtx: limit });
    }
    job.demand = Math.min(limit, n + (job.req.maxTokens ?? DEFAULT_REPLY_BUDGET));
  }

  private async start(l: Loaded, job: Job, running: number) {
    job.tStart = now();
    try {
      if (l.plan.dynamic) {
        const want = contextFor(running + job.demand, l.plan);
        if (want > l.ctx.nCtx) this.resize(l, want, job.tokens.length);
      }
      job.prep = await l.cache.prepare(job.cacheReq);
    } catch (err) {
      job.end(err);
      return;
    }
    job.phase = 'prefill';
    this.active.push(job);
    try {
      if (job.stopReason()) return; // aborted while the cache was read: the next step ends it
      l.cache.makeRoom(job.demand - job.prep.cached, job.slot);
      if (job.logitsOnly) return;
      job.sampler = this.env.guard(() => new Sampler(l.model, job.req.sampler));
      // Penalties look back over the prompt too (as llama.cpp's own tools do).
      for (const t of job.tokens.subarray(Math.max(0, job.tokens.length - job.req.sampler.repeatLastN))) job.sampler.accept(t);
    } catch (err) {
      this.fail(job, err);
    }
  }

  /** One decode step. Returns false when there was nothing to decode (every running request waits for its consumer). */
  private step(l: Loaded): boolean {
    const t0 = now();
    const batch = new Batch();
    for (const job of this.active) {
      if (job.phase === 'generate' && !job.blocked) batch.add(job, [job.next], true);
    }
    for (const job of this.active) {
      const room = N_BATCH - batch.size;
      if (job.phase !== 'prefill' || room <= 0) continue;
      const from = job.slot.tokens.length;
      // A batch ends where a system prompt to cache ends, so its state can be kept as decoded.
      const systemEnd = job.prep.buildSystem?.tokens.length ?? -1;
      let end = Math.min(from + room, job.tokens.length);
      if (from < systemEnd && systemEnd < end) end = systemEnd;
      batch.add(job, job.tokens.subarray(from, end), end === job.tokens.length);
    }
    if (!batch.size) return false;
    if (!this.fit(l, batch.size)) {
      this.overflow(l);
      return true;
    }
    // Growing the context can fail a request whose cells did not move: build the batch again without it.
    if (batch.parts.some((p) => !this.active.includes(p.job))) return true;
    const t1 = now();
    const status = this.env.guard(() => l.ctx.decode(batch.tokens, batch.pos, batch.seq, batch.out));
    const t2 = now();
    if (status === 1) {
      // No contiguous room although the count fits (cells are fragmented): free or grow, else overflow.
      if (!l.cache.evictOne() && !this.grow(l, l.ctx.nCtx + 1)) this.overflow(l);
      return true;
    }
    if (status !== 0) throw new EngineError(`llama_decode failed with status ${status}`, 'decode_failed');
    for (const { job, tokens } of batch.parts) {
      for (let k = 0; k < tokens.length; k++) job.slot.tokens.push(tokens[k]!);
    }
    for (const { job, logits } of batch.parts) {
      if (job.phase === 'prefill') this.prefilled(l, job, logits);
      else this.sample(l, job, logits);
    }
    const t3 = now();
    const p = this.profile;
    p.steps++;
    p.decodeMs += t2 - t1;
    p.sampleMs += t3 - t2;
    p.stepMs += t3 - t0;
    return true;
  }

  /** After a prompt chunk: progress, the system prompt's state, and at the prompt's end the first token. */
  private prefilled(l: Loaded, job: Job, logits: number) {
    const pos = job.slot.tokens.length;
    const build = job.prep.buildSystem;
    if (build && pos === build.tokens.length) l.cache.captureSystem(job.slot, build);
    job.req.onProgress?.({ phase: 'prefill', loaded: pos - job.prep.cached, total: job.tokens.length - job.prep.cached });
    if (logits < 0) return;
    if (job.logitsOnly) {
      job.promptLogits = l.ctx.logits(logits);
      this.finish(l, job);
      return;
    }
    job.startReply(l.model);
    this.sample(l, job, logits);
  }

  private sample(l: Loaded, job: Job, logits: number) {
    const trace = job.trace ? l.ctx.logits(logits) : null;
    const token = this.env.guard(() => job.sampler!.sample(l.ctx, logits));
    if (trace) job.trace!({ token, logits: trace });
    if (job.take(token, l.eog.has(token))) this.finish(l, job);
  }

  /** Makes room for `n` more cells: idle cached conversations go first, then the context grows. */
  private fit(l: Loaded, n: number): boolean {
    while (!l.cache.makeRoom(n)) {
      if (!this.grow(l, l.cache.used() + n)) return false;
    }
    return true;
  }

  private grow(l: Loaded, cells: number): boolean {
    if (!l.plan.dynamic || l.ctx.nCtx >= l.plan.maxCtx) return false;
    try {
      this.resize(l, Math.max(contextFor(cells, l.plan), Math.min(l.plan.maxCtx, l.ctx.nCtx + 1)));
    } catch (err) {
      if (err instanceof ContextFullError) return false; // no memory for more: the overflow policies apply
      throw err;
    }
    return true;
  }

  /**
   * Recreates the context with `nCtx` cells and carries every slot's cells over (state export and import: the
   * same values, no recompute). Logits of the last decode are gone: callers sample before.
   */
  private resize(l: Loaded, nCtx: number, promptTokens = 0) {
    const states = l.cache.exportSlots();
    const old = l.ctx.params;
    l.ctx.free();
    try {
      l.ctx = this.env.guard(() => new LlamaContext(l.model, { ...old, nCtx }));
    } catch (err) {
      // No memory for the larger one: back to the old size, with every slot as it was, and that is the limit now.
      l.ctx = this.env.guard(() => new LlamaContext(l.model, old));
      l.plan.maxCtx = old.nCtx;
      this.failLost(l, l.cache.adopt(l.ctx, states));
      throw new ContextFullError(`the context could not grow to ${nCtx} tokens (${(err as Error).message}); ` +
        'lower kvBudgetBytes or nParallel', { promptTokens, nCtx: old.nCtx });
    }
    this.failLost(l, l.cache.adopt(l.ctx, states));
  }

  /** Running requests whose cells llama.cpp refused to take into a new context cannot go on. */
  private failLost(l: Loaded, lost: Slot[]) {
    for (const job of this.active.filter((j) => lost.includes(j.slot))) {
      this.fail(job, new EngineError('the KV cells of this request could not be moved into the resized context',
        'context_resize_failed', { nCtx: l.ctx.nCtx }));
    }
  }

  /** The context is full and cannot grow: the replies that went past their budget (else all) apply their policy. */
  private overflow(l: Loaded) {
    const generating = this.active.filter((j) => j.phase === 'generate');
    const over = generating.filter((j) => j.slot.tokens.length >= j.demand);
    const victims = over.length ? over : generating;
    if (!victims.length) {
      // Only prompts left and no room: the last admitted gives way (it has streamed nothing yet).
      const job = this.active.at(-1)!;
      this.fail(job, new ContextFullError(`the prompt is ${job.tokens.length} tokens but the context has no room left for it`,
        { promptTokens: job.tokens.length, nCtx: l.ctx.nCtx }));
      return;
    }
    for (const job of victims) {
      const policy = job.req.contextOverflow;
      if (policy === 'shift' && this.shift(l, job)) continue;
      if (policy === 'error') {
        this.fail(job, new ContextFullError(`the reply filled the context (${l.ctx.nCtx} tokens) after ${job.n} tokens`,
          { promptTokens: job.tokens.length, nCtx: l.ctx.nCtx }));
        continue;
      }
      job.finish = 'length';
      this.finish(l, job);
    }
  }

  /**
   * Context shift: keeps the first n_keep tokens (default: the system prompt), drops half of the rest — the oldest
   * — with seq_rm and moves the later cells down with seq_add. slot.tokens drops the same tokens, so it still says
   * exactly what the cells hold. False when there is nothing to drop.
   */
  private shift(l: Loaded, job: Job): boolean {
    const slot = job.slot;
    const len = slot.tokens.length;
    const keep = Math.min(job.keep, len - 2);
    const discard = Math.floor((len - keep) / 2);
    if (keep < 0 || discard < 1) return false;
    // Cells this slot shares with another (a copied prefix) must not move under the other one.
    for (const other of l.cache.slots) {
      if (other === slot || commonPrefix(other.tokens, slot.tokens) <= keep + discard) continue;
      if (other.pending) return false;
      l.cache.evict(other);
    }
    l.ctx.seqRm(slot.seq, keep, keep + discard);
    l.ctx.seqAdd(slot.seq, keep + discard, -1, -discard);
    slot.tokens.splice(keep, discard);
    job.shiftedAt = Math.min(job.shiftedAt ?? keep, keep);
    return true;
  }

  private fail(job: Job, err: unknown) {
    this.finish(this.safeLoaded(), job, err);
  }

  private safeLoaded(): Loaded | null {
    try {
      return this.env.loaded();
    } catch {
      return null;
    }
  }

  /** Ends a running request: the final chunk (when it completed), its sampler, its slot back to the cache. */
  private finish(l: Loaded | null, job: Job, err?: unknown) {
    const i = this.active.indexOf(job);
    if (i >= 0) this.active.splice(i, 1);
    let reply: string | null = null;
    if (err === undefined && !job.logitsOnly) reply = job.complete();
    if (l) {
      job.sampler?.free();
      releaseSlot(l.cache, job.slot, job, reply, err);
    }
    job.sampler = null;
    job.end(err);
  }
}

/**
 * Gives a slot back to the cache. After a completed turn its new cells get saved; after a failure other than an
 * abort it is emptied (its cells may not match its tokens); after a context shift only the part before the cut is
 * kept (the cells after it were computed with context that is gone).
 */
function releaseSlot(cache: PromptCache, slot: Slot, job: Job, reply: string | null, err: unknown) {
  if (err !== undefined && !(err instanceof AbortError)) cache.discard(slot);
  if (job.shiftedAt !== null) {
    cache.trim(slot, job.shiftedAt);
    reply = null;
  }
  cache.finish(slot, job.cacheReq, reply);
}
