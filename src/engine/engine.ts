// The engine: loads a model into the wasm build of llama.cpp and answers chat completions. It runs wherever the
// wasm runs — in the browser's Web Worker (workers/engine.worker.ts exposes it to the page) and in Node (tests,
// benchmarks). Requests run through the scheduler (scheduler.ts), up to nParallel of them decoded together.
import { AbortError, EngineError, HearthError, InvalidRequestError, ModelLoadError } from '../errors.ts';
import { Channel } from '../channel.ts';
import type {
  CacheOptions, CacheSource, ChatCompletion, ChatCompletionChunk, ChatCompletionCreateParams, ChatCompletions, EngineCache, EngineInfo,
  HearthEngine, LoadOptions, ModelInfo, ModelSource,
} from '../types.ts';
import { hashText } from './cache/hash.ts';
import { commonPrefix } from './cache/prefix.ts';
import { type CacheRequest, conversationKey, PromptCache, systemKey, type SystemPrefix } from './cache/prompt-cache.ts';
import { fingerprintFile, layoutKey } from './cache/identity.ts';
import { defaultBudget, KvStore, storeStats } from './cache/store.ts';
import { contextPlan } from './kv-layout.ts';
import { ChatTemplate } from './chat/template.ts';
import { CompletionAssembler, newCompletionMeta } from './completion.ts';
import { checkGgufFile, GgufFormatError } from './gguf.ts';
import { Job, type ChunkSink, type LogitsTrace } from './job.ts';
import { Llama, LlamaContext, type LlamaModel } from './llama/binding.ts';
import type { ModuleLoader } from './llama/module.ts';
import { resolveRequest, type ResolvedRequest } from './request.ts';
import { openSource, type ModelFile } from './source.ts';
import { type Loaded, N_BATCH, Scheduler } from './scheduler.ts';

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
/** Conversations whose KV state stays in memory at once (they share the context's cells). */
const N_SLOTS = 4;
const DEFAULT_PARALLEL = 4;
const MAX_PARALLEL = 16;

export class Engine implements HearthEngine {
  private llama: Llama | null = null;
  private loaded: Loaded | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly scheduler = new Scheduler({
    loaded: () => this.requireLoaded(),
    guard: (fn) => this.guard(fn),
    render: (l, job) => this.cacheRequest(l, job.req),
  });
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
   * Runs fn (a load or unload) after every request and load queued before it; requests queued after it wait for
   * it. An abort while waiting rejects at once and the turn is skipped.
   */
  private exclusive<T>(signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
    const requests = this.scheduler.hold();
    const prev = this.queue.then(() => requests);
    let release!: () => void;
    const turn = new Promise<void>((r) => (release = r));
    this.queue = prev.then(() => turn);
    const run = (async () => {
      await untilOrAbort(prev, signal);
      return fn();
    })();
    const done = () => {
      release();
      this.scheduler.release();
    };
    run.then(done, done);
    return run;
  }

  async load(source: ModelSource, options: LoadOptions = {}): Promise<ModelInfo> {
    const { signal, onProgress } = options;
    const n = options.nParallel;
    if (n !== undefined && (!Number.isInteger(n) || n < 1 || n > MAX_PARALLEL)) {
      throw new InvalidRequestError(`nParallel: expected an integer from 1 to ${MAX_PARALLEL}, got ${JSON.stringify(n)}`,
        'invalid_parameter', { param: 'nParallel' });
    }
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
      const nav = globalThis.navigator as { deviceMemory?: number } | undefined;
      const plan = contextPlan(shape, shape.sizeBytes, options, nav?.deviceMemory ? nav.deviceMemory * 1024 ** 3 : undefined);
      const cacheOptions = this.cacheOptions;
      const nParallel = options.nParallel ?? DEFAULT_PARALLEL;
      // Slots hold the running requests and, between requests, the conversations kept in memory.
      const nSlots = cacheOptions.conversations ? Math.max(N_SLOTS, nParallel) : nParallel;
      ctx = this.guard(() => new LlamaContext(model!, {
        nCtx: plan.initialCtx, nBatch: N_BATCH, nUbatch: N_BATCH, nSeqMax: PromptCache.sequencesNeeded(nSlots),
        threads: this.config.loader.threads, typeK: plan.typeK, typeV: plan.typeV, flashAttn: plan.flashAttn,
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
        model, ctx, plan, nParallel, template, bosText: text(model.bos), eog: model.eogTokens, info, cache, layout,
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
      context: l ? {
        nCtx: l.ctx.nCtx, maxCtx: l.plan.maxCtx, dynamic: l.plan.dynamic, nParallel: l.nParallel,
        kvBytesPerToken: l.plan.kvBytesPerToken, budgetBytes: l.plan.budgetBytes,
      } : null,
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
  complete(params: ChatCompletionCreateParams | ResolvedRequest, sink: ChunkSink, signal?: AbortSignal, trace?: LogitsTrace): Promise<void> {
    const req = 'sampler' in params ? params : resolveRequest(params);
    const model = this.loaded?.info.name ?? '';
    return this.scheduler.submit(new Job(req, sink, signal, newCompletionMeta(model), false, trace));
  }

  /** The request's prompt tokens, what the cache matches them by, and the tokens a context shift keeps. */
  private cacheRequest(l: Loaded, req: ResolvedRequest): CacheRequest & { keep: number } {
    const { prompt, addSpecial, tokens } = this.renderPrompt(l, req);
    const shift = req.contextOverflow === 'shift';
    // The system prompt's length (a render and a tokenization) is needed to cache it, or as a shift's default n_keep.
    const systemN = this.cacheOptions.systemPrompt || (shift && req.nKeep === null)
      ? this.systemLength(l, req, prompt, tokens, addSpecial) : 0;
    const system = this.systemPrefix(l, systemN, tokens);
    const keep = shift ? req.nKeep ?? (systemN || (l.model.addBos ? 1 : 0)) : 0;
    return {
      messages: req.messages, tools: req.tools, conversationId: req.conversationId, tokens, system, onProgress: req.onProgress, keep,
    };
  }

  /** The request's prompt text and its tokens (control tokens parsed), as the cache matches them. */
  private renderPrompt(l: Loaded, req: Pick<ResolvedRequest, 'messages' | 'tools'>) {
    const prompt = l.template.render(req.messages, { tools: req.tools });
    // Templates that write the BOS text themselves must not get a second BOS from the tokenizer.
    const addSpecial = !(l.bosText && prompt.startsWith(l.bosText));
    return { prompt, addSpecial, tokens: this.guard(() => l.model.tokenize(prompt, addSpecial, true)) };
  }

  /**
   * The next-token logits after the request's prompt, through the same cache path and scheduler as a completion
   * (no reply is generated). For tests that compare cached and cold prompt processing.
   */
  async promptLogits(params: ChatCompletionCreateParams): Promise<{ logits: Float32Array; cached: number; source: CacheSource }> {
    const job = new Job(resolveRequest(params), () => {}, params.signal, newCompletionMeta(''), true);
    await this.scheduler.submit(job);
    return { logits: job.promptLogits!, cached: job.prep.cached, source: job.prep.source };
  }

  private requireLoaded(): Loaded {
    if (!this.loaded) throw new InvalidRequestError('no model is loaded: call engine.load(source) first', 'no_model');
    return this.loaded;
  }

  /** The first `n` prompt tokens (the rendered system messages and tools), when long enough to cache on their own. */
  private systemPrefix(l: Loaded, n: number, tokens: Int32Array): SystemPrefix | null {
    const opts = this.cacheOptions;
    if (!opts.systemPrompt) return null;
    if (n < opts.minTokens || n >= tokens.length) return null;
    const own = tokens.slice(0, n);
    return { key: systemKey(l.layout, l.templateHash, own), tokens: own };
  }

  /** How many prompt tokens the rendered system messages (and tools) take; 0 when there are none. */
  private systemLength(l: Loaded, req: ResolvedRequest, prompt: string, tokens: Int32Array, addSpecial: boolean): number {
    let lead = 0;
    while (lead < req.messages.length && (req.messages[lead]!.role === 'system' || req.messages[lead]!.role === 'developer')) lead++;
    if (lead === 0 || lead === req.messages.length) return 0;
    let text: string;
    try {
      text = l.template.render(req.messages.slice(0, lead), { tools: req.tools, addGenerationPrompt: false });
    } catch {
      return 0; // some templates refuse a conversation without a user message
    }
    if (!text || !prompt.startsWith(text)) return 0;
    // The prefix's own tokenization can differ at its end from the whole prompt's: keep the part they share.
    return commonPrefix(this.guard(() => l.model.tokenize(text, addSpecial, true)), tokens);
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

const bytes = (n: number) => (n >= 1024 ** 3 ? `${(n / 1024 ** 3).toFixed(2)} GiB` : `${(n / 1024 ** 2).toFixed(1)} MiB`);
