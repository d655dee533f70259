// The engine: loads a model into the wasm build of llama.cpp and answers chat completions. It runs wherever the
// wasm runs — in the browser's Web Worker (workers/engine.worker.ts exposes it to the page) and in Node (tests,
// benchmarks). One request decodes at a time; others wait in FIFO order.
import { AbortError, ContextFullError, EngineError, HearthError, InvalidRequestError, ModelLoadError } from '../errors.ts';
import { Channel } from '../channel.ts';
import type {
  CacheOptions, CacheSource, ChatCompletion, ChatCompletionChunk, ChatCompletionCreateParams, ChatCompletions, EngineCache, EngineInfo,
  FinishReason, HearthEngine, LoadOptions, ModelInfo, ModelSource,
} from '../types.ts';
import { hashText } from './cache/hash.ts';
import { commonPrefix } from './cache/prefix.ts';
import {
  type CacheRequest, conversationKey, type Prepared, PromptCache, type Slot, systemKey, type SystemPrefix,
} from './cache/prompt-cache.ts';
import { fingerprintFile, layoutKey } from './cache/identity.ts';
import { defaultBudget, KvStore, storeStats } from './cache/store.ts';
import { kvLayout } from './kv-layout.ts';
import { ChatTemplate } from './chat/template.ts';
import { chunk, CompletionAssembler, newCompletionMeta } from './completion.ts';
import { Detokenizer } from './detokenizer.ts';
import { checkGgufFile, GgufFormatError } from './gguf.ts';
import { Llama, LlamaContext, type LlamaModel, Sampler } from './llama/binding.ts';
import type { ModuleLoader } from './llama/module.ts';
import { resolveRequest, type ResolvedRequest } from './request.ts';
import { openSource, type ModelFile } from './source.ts';
import { StopMatcher } from './stop.ts';
import { yieldToEventLoop } from './yield.ts';

export interface EngineConfig {
  loader: ModuleLoader;
  /** Model files larger than this are refused before loading (wasm32 heap: 4 GiB, minus KV cache and buffers). */
  maxModelBytes?: number;
  openPath?: (path: string) => Promise<ModelFile>;
  fetch?: typeof fetch;
  cache?: CacheOptions;
  /** Where saved KV state goes. Default: IndexedDB (idb-keyval) when the platform has it; null turns saving off. */
  kvStore?: KvStore | null;
}

export const DEFAULT_MAX_MODEL_BYTES = 3.5 * 1024 ** 3;
const DEFAULT_N_CTX = 4096;
const N_BATCH = 512;
/** Conversations whose KV state stays in memory at once (they share the context's cells). */
const N_SLOTS = 4;
/** Cells set aside for the reply when making room for a request without max_tokens. */
const REPLY_RESERVE = 256;

interface Loaded {
  model: LlamaModel;
  ctx: LlamaContext;
  template: ChatTemplate;
  bosText: string;
  eog: Set<number>;
  info: ModelInfo;
  cache: PromptCache;
  /** Model fingerprint, llama.cpp build and KV layout: saved state is only restored into the same. */
  layout: string;
  templateHash: string;
}

interface Prefilled {
  tokens: Int32Array;
  cacheReq: CacheRequest;
  prep: Prepared;
  tStart: number;
  /** Batch index of the last prompt token's logits. */
  lastOutput: number;
}

export type ChunkSink = (c: ChatCompletionChunk) => void | Promise<void>;

export class Engine implements HearthEngine {
  private llama: Llama | null = null;
  private loaded: Loaded | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly maxModelBytes: number;
  private store: Promise<KvStore | null> | null = null;

  readonly chat: { readonly completions: ChatCompletions };
  readonly cache: EngineCache;

  constructor(private readonly config: EngineConfig) {
    this.maxModelBytes = config.maxModelBytes ?? DEFAULT_MAX_MODEL_BYTES;
    const create = (params: ChatCompletionCreateParams) => this.create(params);
    this.chat = { completions: { create } as ChatCompletions };
    this.cache = {
      stats: async () => {
        const l = this.loaded;
        if (l) return l.cache.stats();
        const store = await this.getStore();
        if (store) await store.records().catch(() => {});
        return storeStats(store);
      },
      clear: async (opts = {}) => {
        const id = opts.conversation_id;
        if (this.loaded) return this.loaded.cache.clear(id);
        const store = await this.getStore();
        if (store) await (id === undefined ? store.clear() : store.remove(conversationKey(id)));
      },
      flush: async () => this.loaded?.cache.flush(),
    };
  }

  private get cacheOptions() {
    const c = this.config.cache ?? {};
    return {
      persistent: c.persistent ?? true, systemPrompt: c.systemPrompt ?? true, conversations: c.conversations ?? true,
      minTokens: Math.max(1, Math.floor(c.minTokens ?? 100)),
    };
  }

  /** The IndexedDB store for saved KV state, opened once; null when persistence is off or unavailable. */
  private getStore(): Promise<KvStore | null> {
    this.store ??= (async () => {
      if (this.config.kvStore !== undefined) return this.config.kvStore;
      if (!this.cacheOptions.persistent) return null;
      return KvStore.open(this.config.cache?.budgetBytes ?? await defaultBudget());
    })();
    return this.store;
  }

  /** Instantiates the wasm module (also done lazily by load). */
  async init(): Promise<void> {
    await this.getLlama();
  }

  private async getLlama(): Promise<Llama> {
    this.llama ??= new Llama(await this.config.loader.load());
    return this.llama;
  }

  /**
   * Runs fn after everything queued before it. An abort while waiting rejects at once and the turn is skipped.
   */
  private exclusive<T>(signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
    const prev = this.queue;
    let release!: () => void;
    const turn = new Promise<void>((r) => (release = r));
    this.queue = prev.then(() => turn);
    const run = (async () => {
      await untilOrAbort(prev, signal);
      return fn();
    })();
    run.then(release, release);
    return run;
  }

  async load(source: ModelSource, options: LoadOptions = {}): Promise<ModelInfo> {
    const { signal, onProgress } = options;
    return this.exclusive(signal, async () => {
      this.unloadNow();
      const file = await openSource(source, { signal, onProgress, fetch: this.config.fetch, openPath: this.config.openPath });
      if (file.size > this.maxModelBytes) {
        throw new ModelLoadError(
          `${file.name} is ${bytes(file.size)}; this engine holds models up to ${bytes(this.maxModelBytes)} ` +
          '(WebAssembly has a 4 GB heap, shared with the KV cache). Pick a smaller model or quantization (e.g. Q4_K_M).',
          'too_large', { size: file.size, limit: this.maxModelBytes });
      }
      try {
        await checkGgufFile(file.read, file.size);
      } catch (err) {
        if (err instanceof GgufFormatError) {
          throw new ModelLoadError(`${file.name} cannot be loaded: ${err.message}.` +
            (err.reason === 'truncated' ? ' The download may have been cut short; fetch it again.' : ' Choose a .gguf model file.'),
          err.reason, { name: file.name });
        }
        throw err;
      }
      if (signal?.aborted) throw new AbortError('model load aborted');
      const fingerprint = await fingerprintFile(file);
      this.loaded = await this.loadChecked(file, options, fingerprint);
      return this.loaded.info;
    });
  }

  private async loadChecked(file: ModelFile, options: LoadOptions, fingerprint: string): Promise<Loaded> {
    const llama = await this.getLlama();
    const mark = llama.log.mark();
    const mounted = file.mount(llama.mod);
    let model: LlamaModel | null = null;
    try {
      llama.mod.hearthProgress = (p) => {
        options.onProgress?.({ phase: 'load', loaded: Math.round(p * file.size), total: file.size });
        return !options.signal?.aborted;
      };
      model = this.guard(() => llama.loadModel(mounted.path));
    } finally {
      llama.mod.hearthProgress = undefined;
      mounted.unmount(); // llama.cpp has copied the tensors; the file is no longer read
    }
    if (!model) {
      if (options.signal?.aborted) throw new AbortError('model load aborted');
      const why = llama.log.since(mark, true).filter((l) => l.startsWith('error')).join(' | ') || 'no reason logged';
      throw new ModelLoadError(`llama.cpp could not load ${file.name}: ${why}`, 'unsupported', { log: llama.log.since(mark) });
    }
    let ctx: LlamaContext | null = null;
    try {
      const shape = model.shape();
      const nCtx = Math.max(16, Math.min(options.nCtx ?? DEFAULT_N_CTX, shape.nCtxTrain || DEFAULT_N_CTX));
      const cacheOptions = this.cacheOptions;
      const nSlots = cacheOptions.conversations ? N_SLOTS : 1;
      ctx = this.guard(() => new LlamaContext(model!, {
        nCtx, nBatch: N_BATCH, nUbatch: N_BATCH, nSeqMax: PromptCache.sequencesNeeded(nSlots), threads: this.config.loader.threads,
        ...kvLayout(shape, nCtx, options),
      }));
      const layout = layoutKey(fingerprint, llama.llamaBuild, ctx.params);
      const cache = new PromptCache(ctx, cacheOptions, await this.getStore(), layout, nSlots);
      await cache.init();
      const text = (t: number) => (t >= 0 ? new TextDecoder().decode(model!.tokenBytes(t, true)) : '');
      const template = new ChatTemplate(model.chatTemplate, { bos: text(model.bos), eos: text(model.eos) });
      if (template.warning) console.warn(`[hearth] ${template.warning}`);
      const metadata = model.metadata();
      const info: ModelInfo = {
        name: metadata['general.name'] || file.name,
        description: model.description,
        architecture: metadata['general.architecture'] || 'unknown',
        sizeBytes: shape.sizeBytes, nParams: shape.nParams, nCtxTrain: shape.nCtxTrain, nEmbd: shape.nEmbd,
        nLayer: shape.nLayer, nHead: shape.nHead, nHeadKv: shape.nHeadKv, nVocab: shape.nVocab,
        bosToken: model.bos, eosToken: model.eos, eogTokens: [...model.eogTokens],
        chatTemplate: model.chatTemplate, metadata,
      };
      options.onProgress?.({ phase: 'load', loaded: file.size, total: file.size });
      return {
        model, ctx, template, bosText: text(model.bos), eog: model.eogTokens, info, cache, layout,
        templateHash: hashText(template.source),
      };
    } catch (err) {
      if (this.llama) {
        ctx?.free();
        model.free();
      }
      if (err instanceof HearthError) throw err;
      throw new ModelLoadError(`could not set up ${file.name}: ${(err as Error).message}`, 'context_failed');
    }
  }

  /**
   * Runs a call into wasm. A wasm trap (out of memory, llama.cpp abort) leaves the module unusable: forget it, so
   * the next load creates a fresh one, and report a typed error.
   */
  private guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      if (err instanceof WebAssembly.RuntimeError || (err as Error)?.name === 'RuntimeError') {
        this.llama = null;
        this.loaded = null;
        throw new EngineError(`llama.cpp stopped with a fatal error (${(err as Error).message}); load the model again.`, 'wasm_crash');
      }
      throw err;
    }
  }

  async unload(): Promise<void> {
    await this.exclusive(undefined, async () => this.unloadNow());
  }

  private unloadNow() {
    const l = this.loaded;
    this.loaded = null;
    if (l && this.llama) {
      l.ctx.free();
      l.model.free();
    }
  }

  async info(): Promise<EngineInfo> {
    const llama = await this.getLlama();
    const l = this.loaded;
    return {
      backend: 'wasm',
      build: this.config.loader.variant,
      threads: this.config.loader.threads,
      llamaBuild: llama.llamaBuild,
      wasmSimd: llama.wasmSimd,
      model: l?.info ?? null,
      nCtx: l?.ctx.nCtx ?? 0,
      kvCache: l ? { typeK: l.ctx.params.typeK, typeV: l.ctx.params.typeV, flashAttention: l.ctx.params.flashAttn === 1 } : null,
      capabilities: {
        persistentKv: (await this.getStore()) !== null,
        webgpu: typeof navigator !== 'undefined' && 'gpu' in navigator,
        threads: this.config.loader.variant === 'mt',
      },
    };
  }

  private async create(params: ChatCompletionCreateParams): Promise<ChatCompletion | AsyncIterable<ChatCompletionChunk>> {
    const req = resolveRequest(params);
    if (!req.stream) {
      const assembler = new CompletionAssembler();
      return this.complete(req, (c) => assembler.add(c), params.signal).then(() => assembler.result());
    }
    const controller = new AbortController();
    const signal = params.signal ? AbortSignal.any([params.signal, controller.signal]) : controller.signal;
    const channel = new Channel<ChatCompletionChunk>(16, () => controller.abort());
    this.complete(req, (c) => channel.push(c), signal).then(() => channel.end(), (err) => channel.fail(err));
    await channel.ready; // errors before the first chunk (ContextFullError, AbortError while queued) reject here
    return channel;
  }

  /**
   * Generates one completion, handing every chunk to `sink` (awaited: a slow sink slows generation). Resolves after
   * the final chunk; rejects with AbortError, ContextFullError (before any chunk) or another HearthError.
   */
  complete(params: ChatCompletionCreateParams | ResolvedRequest, sink: ChunkSink, signal?: AbortSignal): Promise<void> {
    const req = 'sampler' in params ? params : resolveRequest(params);
    return this.exclusive(signal, () => this.generate(req, sink, signal));
  }

  /**
   * Renders and tokenizes the request, takes what the cache has of it and decodes the rest into a slot. The caller
   * must end with cache.finish(prefilled.slot, …) (or discard), also when this throws after the slot was taken.
   */
  private async prefill(l: Loaded, req: ResolvedRequest, signal: AbortSignal | undefined): Promise<Prefilled> {
    const { ctx } = l;
    const { prompt, addSpecial, tokens } = this.renderPrompt(l, req);
    if (tokens.length + 1 > ctx.nCtx) {
      throw new ContextFullError(
        `the prompt is ${tokens.length} tokens but the context holds ${ctx.nCtx}: shorten the conversation or load the model with a larger nCtx`,
        { promptTokens: tokens.length, nCtx: ctx.nCtx });
    }
    const tStart = now();
    const cacheReq: CacheRequest = {
      messages: req.messages, tools: req.tools, conversationId: req.conversationId, tokens,
      system: this.systemPrefix(l, req, prompt, tokens, addSpecial), onProgress: req.onProgress,
    };
    const prep = await l.cache.prepare(cacheReq);
    const { slot } = prep;
    const done: Prefilled = { tokens, cacheReq, prep, tStart, lastOutput: 0 };
    try {
      l.cache.makeRoom(slot, tokens.length - prep.cached + Math.min(req.maxTokens ?? REPLY_RESERVE, ctx.nCtx));
      // Decode what the cache did not have, in batches; one batch ends where a system prompt to cache ends.
      const systemEnd = prep.buildSystem?.tokens.length ?? -1;
      let pos = prep.cached;
      while (pos < tokens.length) {
        let end = Math.min(pos + N_BATCH, tokens.length);
        if (pos < systemEnd && systemEnd < end) end = systemEnd;
        const part = tokens.subarray(pos, end);
        if (!this.decodeInto(l, slot, part, end === tokens.length)) {
          throw new ContextFullError(
            `the prompt is ${tokens.length} tokens but the KV cache has no room for it: load the model with a larger nCtx`,
            { promptTokens: tokens.length, nCtx: ctx.nCtx });
        }
        pos = end;
        done.lastOutput = part.length - 1;
        if (pos === systemEnd) l.cache.captureSystem(slot, prep.buildSystem!);
        req.onProgress?.({ phase: 'prefill', loaded: pos - prep.cached, total: tokens.length - prep.cached });
        await yieldToEventLoop();
        if (signal?.aborted) throw new AbortError();
      }
      return done;
    } catch (err) {
      this.endTurn(l, done, null, err);
      throw err;
    }
  }

  /** The request's prompt text and its tokens (control tokens parsed), as the cache matches them. */
  private renderPrompt(l: Loaded, req: Pick<ResolvedRequest, 'messages' | 'tools'>) {
    const prompt = l.template.render(req.messages, { tools: req.tools });
    // Templates that write the BOS text themselves must not get a second BOS from the tokenizer.
    const addSpecial = !(l.bosText && prompt.startsWith(l.bosText));
    return { prompt, addSpecial, tokens: this.guard(() => l.model.tokenize(prompt, addSpecial, true)) };
  }

  /** Releases the slot: after a completed turn its new cells get saved; after a failure other than abort it is emptied. */
  private endTurn(l: Loaded, p: Prefilled, reply: string | null, err?: unknown) {
    if (!this.llama || this.loaded !== l) return;
    if (err !== undefined && !(err instanceof AbortError)) l.cache.discard(p.prep.slot);
    l.cache.finish(p.prep.slot, p.cacheReq, reply);
  }

  /**
   * The next-token logits after the request's prompt, through the same cache path as a completion (no reply is
   * generated). For tests that compare cached and cold prompt processing.
   */
  promptLogits(params: ChatCompletionCreateParams): Promise<{ logits: Float32Array; cached: number; source: CacheSource }> {
    const req = resolveRequest(params);
    return this.exclusive(params.signal, async () => {
      const l = this.requireLoaded();
      const p = await this.prefill(l, req, params.signal);
      try {
        return { logits: l.ctx.logits(p.lastOutput), cached: p.prep.cached, source: p.prep.source };
      } finally {
        this.endTurn(l, p, null);
      }
    });
  }

  private requireLoaded(): Loaded {
    if (!this.loaded) throw new InvalidRequestError('no model is loaded: call engine.load(source) first', 'no_model');
    return this.loaded;
  }

  private async generate(req: ResolvedRequest, sink: ChunkSink, signal: AbortSignal | undefined): Promise<void> {
    const l = this.requireLoaded();
    const { model, ctx } = l;
    const meta = newCompletionMeta(l.info.name);
    const p = await this.prefill(l, req, signal);
    const { tokens, prep, tStart } = p;
    const { slot } = prep;
    let reply: string | null = null;
    let sampler: Sampler | null = null;
    let failure: unknown;
    try {
      sampler = this.guard(() => new Sampler(model, req.sampler));
      // Penalties look back over the prompt too (as llama.cpp's own tools do).
      for (const t of tokens.subarray(Math.max(0, tokens.length - req.sampler.repeatLastN))) sampler.accept(t);
      const tPrompt = now();

      await sink(chunk(meta, { role: 'assistant', content: '' }));
      const detok = new Detokenizer((t) => model.tokenBytes(t, false));
      const stops = new StopMatcher(req.stop);
      let text = '';
      let tFirst = 0;
      let n = 0;
      let outIndex = p.lastOutput;
      let finish: FinishReason = 'stop';
      let stoppedByString = false;
      const emit = async (piece: string) => {
        text += piece;
        if (piece) await sink(chunk(meta, { content: piece }));
      };
      for (;;) {
        const tok = this.guard(() => sampler!.sample(ctx, outIndex));
        if (n === 0) tFirst = now();
        if (l.eog.has(tok)) break;
        n++;
        const { emit: piece, stopped } = stops.push(detok.push(tok));
        await emit(piece);
        if (stopped) {
          stoppedByString = true;
          break;
        }
        if (req.maxTokens !== null && n >= req.maxTokens) {
          finish = 'length';
          break;
        }
        if (slot.tokens.length + 1 > ctx.nCtx || !this.decodeInto(l, slot, [tok], true)) {
          finish = 'length'; // the context is full
          break;
        }
        outIndex = 0;
        await yieldToEventLoop();
        if (signal?.aborted) throw new AbortError();
      }
      if (!stoppedByString) {
        // Bytes of an unfinished character, and text held back in case it began a stop string.
        const tail = stops.push(detok.flush());
        await emit(tail.emit + (tail.stopped ? '' : stops.flush()));
      }
      const tEnd = now();
      const promptN = tokens.length - prep.cached;
      const usage = {
        prompt_tokens: tokens.length, completion_tokens: n, total_tokens: tokens.length + n,
        prompt_tokens_details: { cached_tokens: prep.cached },
      };
      const timings = {
        prompt_n: promptN, prompt_ms: round(tPrompt - tStart), predicted_n: n, predicted_ms: round(tEnd - (tFirst || tPrompt)),
        cache_n: prep.cached, cache_source: prep.source,
      };
      await sink(chunk(meta, {}, finish, { usage, timings }));
      reply = text;
    } catch (err) {
      failure = err;
      throw err;
    } finally {
      if (this.llama && this.loaded === l) sampler?.free();
      this.endTurn(l, p, reply, failure);
    }
  }

  /**
   * Decodes `part` at the end of the slot's sequence and records it in slot.tokens; logits only for the last token
   * when `logitsLast`. When the KV cache is full, idle conversations are evicted and it tries again; false if it
   * still cannot fit.
   */
  private decodeInto(l: Loaded, slot: Slot, part: ArrayLike<number>, logitsLast: boolean): boolean {
    const start = slot.tokens.length;
    for (;;) {
      const status = this.guard(() => l.ctx.decode(part, range(start, part.length), fill(part.length, slot.seq),
        Array.from(part, (_, k) => logitsLast && k === part.length - 1)));
      if (status === 0) {
        for (let i = 0; i < part.length; i++) slot.tokens.push(part[i]!);
        return true;
      }
      if (status !== 1) throw new EngineError(`llama_decode failed with status ${status}`, 'decode_failed');
      if (!l.cache.evictOne(slot)) return false;
    }
  }

  /** The rendered system messages (and tools) at the start of the prompt, when long enough to cache on their own. */
  private systemPrefix(l: Loaded, req: ResolvedRequest, prompt: string, tokens: Int32Array, addSpecial: boolean): SystemPrefix | null {
    const opts = this.cacheOptions;
    if (!opts.systemPrompt) return null;
    let lead = 0;
    while (lead < req.messages.length && (req.messages[lead]!.role === 'system' || req.messages[lead]!.role === 'developer')) lead++;
    if (lead === 0 || lead === req.messages.length) return null;
    let text: string;
    try {
      text = l.template.render(req.messages.slice(0, lead), { tools: req.tools, addGenerationPrompt: false });
    } catch {
      return null; // some templates refuse a conversation without a user message
    }
    if (!text || !prompt.startsWith(text)) return null;
    // The prefix's own tokenization can differ at its end from the whole prompt's: keep the part they share.
    const n = commonPrefix(this.guard(() => l.model.tokenize(text, addSpecial, true)), tokens);
    if (n < opts.minTokens || n >= tokens.length) return null;
    const own = tokens.slice(0, n);
    return { key: systemKey(l.layout, l.templateHash, own), tokens: own };
  }
}

/** Resolves with `p`, or rejects with AbortError as soon as `signal` aborts (without leaving a listener behind). */
function untilOrAbort(p: Promise<unknown>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return p.then(() => {});
  if (signal.aborted) return Promise.reject(new AbortError());
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(new AbortError());
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}

const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());
const round = (ms: number) => Math.round(ms * 100) / 100;
const bytes = (n: number) => (n >= 1024 ** 3 ? `${(n / 1024 ** 3).toFixed(2)} GiB` : `${(n / 1024 ** 2).toFixed(1)} MiB`);
const range = (start: number, n: number) => Array.from({ length: n }, (_, k) => start + k);
const fill = (n: number, v: number) => new Array<number>(n).fill(v);
