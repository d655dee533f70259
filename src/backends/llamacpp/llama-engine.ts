// Hearth's llama.cpp engine: llama.cpp's wasm build and the model loaded into it, answering a backend's calls and the
// services only it has, the KV state store and the model store (contract.ts ServedCalls). It runs wherever the wasm
// runs — in the browser's Web Worker (worker/host.ts serves the page's calls) and in Node (src/node.ts). Loading is
// load.ts, prompts prompt.ts, requests run through the scheduler (run/scheduler.ts).
import type {
  BackendInfo,
  CallControl,
  CompletionRequest,
  EmbedResult,
  ExportPromptRequest,
  LoadRequest,
  RankResult,
  ServedCalls,
} from '../../contract.ts';
import { EngineError, InvalidRequestError, ModelLoadError, terminatedError } from '../../errors.ts';
import type { CacheOptions, CacheStats, ModelInfo, ModelStoreUsage, StoredModel, StoredModelRef } from '../../types.ts';
import type { CacheConfig } from './cache/prompt-cache.ts';
import { defaultBudget, KvStore, storedStats } from './cache/kv-store.ts';
import { pooledOutputs, rerankTokens } from './embed.ts';
import { Job } from './run/job.ts';
import { Llama } from './binding/llama.ts';
import type { ModuleLoader } from './binding/module.ts';
import {
  DEFAULT_CHUNK_BYTES,
  DEFAULT_MAX_MODEL_BYTES,
  MEMORY64_HEAP_BYTES,
  MEMORY64_MAX_MODEL_BYTES,
  WASM32_HEAP_BYTES,
} from '../../core/limits.ts';
import { loadSession, openModelFile } from './load.ts';
import { type GpuPlacement, tooLargeForCpu } from '../../core/models/check.ts';
import { openPromptState } from './prompt-state/open-file.ts';
import { writePromptState } from './prompt-state/file-format.ts';
import { prefillState } from './prompt-state/prefill.ts';
import { resolveRequest } from '../../core/chat/request.ts';
import { Scheduler } from './run/scheduler.ts';
import type { Session } from './run/session.ts';
import type { ModelStore } from '../../core/models/store.ts';
import type { ModelFile } from '../../core/models/file.ts';
import { isWebSource } from '../../core/models/web-source.ts';
import type { SourceOptions } from '../../core/models/source.ts';
import { openProjector } from '../../core/models/projector.ts';
import { resolveMedia } from '../../core/chat/media.ts';
import { VERSION } from '../../core/build.ts';

export interface LlamaEngineConfig {
  loader: ModuleLoader;
  /** Model files larger than this are refused before loading (wasm32 heap: 4 GiB, minus KV cache and buffers). */
  maxModelBytes?: number;
  openPath?: (path: string) => Promise<ModelFile>;
  fetch?: typeof fetch;
  /** Where URL and { hf } models are kept (OPFS, a folder in Node); null: downloaded into memory each time. */
  models?: ModelStore | null;
  /** Where { hf } sources are fetched from. Default https://huggingface.co. */
  hfEndpoint?: string;
  cache?: CacheOptions;
  /**
   * The WebGPU build: a model whose GPU buffers cannot be allocated loads with every layer on the CPU instead of
   * failing with `gpu_allocation_failed` (what backend 'auto' asks for; 'webgpu' wants the error).
   */
  gpuFallback?: boolean;
  /** The WebGPU build: false computes in f32 even where the adapter has shader-f16 (f16 data stays 16-bit, packed in
   * 32-bit words): the path of adapters without it, to compare the two on one GPU. Default: f16 where the adapter has
   * it. */
  shaderF16?: boolean;
  /** The WebGPU build: false encodes every graph afresh instead of issuing a recorded one of the same signature again
   * (wasm/patches/0035), to compare the two. Default: replay. */
  gpuReplay?: boolean;
  /** The WebGPU build: false runs the matrix products on the register-tiled shaders even where the adapter offers
   * subgroup matrices (`chromium-experimental-subgroup-matrix`, wasm/patches/0036), to compare the two. Default: the
   * subgroup-matrix shaders where the adapter has them with shader-f16. */
  subgroupMatrix?: boolean;
  /** Where saved KV state goes when cache.persistent is on. Default: IndexedDB (idb-keyval) when the platform has it.
   */
  kvStore?: KvStore | null;
}

/** What engine.info().buildReason adds about a relaxed build's dot products on this CPU (Llama.simdDot). */
function dotReason(dot: 'int16' | 'int32' | null): string {
  if (dot === 'int16') return '; its 8-bit dot products run as x86 pmaddubsw, with products summed in int16';
  if (dot === 'int32') return '; its 8-bit dot products run as one instruction each';
  return '';
}

export class LlamaEngine implements ServedCalls {
  private llama: Llama | null = null;
  private session: Session | null = null;
  /** Runs every request on the loaded model (test-hooks.ts reaches it in Node, for tests and benchmarks). */
  readonly scheduler = new Scheduler(() => this.requireSession());
  private store: Promise<KvStore | null> | null = null;
  /** The model loaded last, what a crashed module is reloaded with; null when none is (or it was unloaded). */
  private loaded: LoadRequest | null = null;
  private reviving: Promise<void> | null = null;
  /** Crashes of this engine while layers ran on the GPU, the last one's message: under gpuFallback the second hands
   * the model to the CPU (a GPU that traps every time would otherwise reload and crash on every request). */
  private gpuCrashes = { count: 0, last: '' };
  private readonly cacheConfig: CacheConfig & { persistent: boolean };
  /** Set by terminate(): every call answers 'terminated'. */
  private terminated = false;

  constructor(private readonly config: LlamaEngineConfig) {
    const c = config.cache ?? {};
    this.cacheConfig = {
      persistent: c.persistent ?? true,
      systemPrompt: c.systemPrompt ?? true,
      conversations: c.conversations ?? true,
      minTokens: Math.max(1, Math.floor(c.minTokens ?? 100)),
      chunkBytes: c.chunkBytes ?? DEFAULT_CHUNK_BYTES,
    };
  }

  /** Instantiates the wasm module (also done lazily by load). */
  async init(): Promise<void> {
    await this.getLlama();
  }

  /**
   * A module to load into: a new one after a crash (a wasm trap leaves a module unusable). `orCpu`: the WebGPU build
   * may come up without its GPU (a reload after the GPU was lost) and run on the CPU.
   */
  private async getLlama(orCpu = false): Promise<Llama> {
    if (this.terminated) throw terminatedError();
    if (!this.llama || this.llama.crashed) {
      // A trapped module's threads would keep its heap (up to 4 GiB) beside the fresh one's.
      this.llama?.end();
      const mark = this.llama?.log.mark() ?? 0;
      const llama = await Llama.create(await this.config.loader.load(), {
        shaderF16: this.config.shaderF16,
        gpuReplay: this.config.gpuReplay,
        subgroupMatrix: this.config.subgroupMatrix,
      });
      // The GPU build without its GPU would be a slower CPU engine: say why (api/gpu-engine.ts then starts a CPU one).
      if (this.config.loader.variant === 'webgpu' && !llama.gpu && !orCpu) {
        const log = llama.log.since(mark);
        const why = log.slice(-3).join(' | ') || 'no reason logged';
        throw new EngineError(`llama.cpp's WebGPU backend could not use this adapter: ${why}`, 'webgpu_unavailable', {
          log,
        });
      }
      this.llama = llama;
    }
    return this.llama;
  }

  /** What the heap may hold of a model: all of it on the CPU engine, what stays on the CPU on the GPU engine. */
  private get maxBytes(): number {
    return this.config.maxModelBytes ?? (this.memory64 ? MEMORY64_MAX_MODEL_BYTES : DEFAULT_MAX_MODEL_BYTES);
  }

  /** The memory64 build: a heap up to 16 GiB where the others have 4. */
  private get memory64(): boolean {
    return this.config.loader.variant === 'mt64';
  }

  /** The GPU build with its adapter: the module started (before any download: a GPU engine that cannot start says so
   * first) and what decides the heap's share of a model (core/models/check.ts); undefined on the CPU engine. */
  private async gpuPlacement(revive: boolean): Promise<GpuPlacement | undefined> {
    if (this.config.loader.variant !== 'webgpu') return undefined;
    const llama = await this.getLlama(revive);
    const bindingLimit = llama.gpuBindingLimit;
    return llama.gpu && bindingLimit ? { adapter: llama.gpu, bindingLimit } : undefined;
  }

  /** Saved KV state, opened once; null when cache.persistent is off or the platform has no IndexedDB. */
  private getStore(): Promise<KvStore | null> {
    this.store ??= (async () => {
      if (!this.cacheConfig.persistent) return null;
      if (this.config.kvStore !== undefined) return this.config.kvStore;
      return KvStore.open(this.config.cache?.budgetBytes ?? (await defaultBudget()));
    })();
    return this.store;
  }

  /** The loaded model, unless its module crashed. */
  private get live(): Session | null {
    return this.session && !this.session.llama.crashed ? this.session : null;
  }

  /** The loaded model; InvalidRequestError 'no_model' without one. */
  requireSession(): Session {
    if (this.terminated) throw terminatedError();
    const s = this.live;
    if (!s) throw new InvalidRequestError('no model is loaded: call engine.load(source) first', 'no_model');
    return s;
  }

  /** `options` checked by the router (core/options.ts checkLoadOptions); nCtx against the model by kv-layout.ts. */
  load(request: LoadRequest, control: CallControl = {}, revive = false): Promise<ModelInfo> {
    const { source, options } = request;
    const state = options.promptState;
    const { signal, onProgress } = control;
    return this.scheduler.exclusive(signal, async () => {
      this.unloadNow();
      const opened = {
        signal,
        onProgress,
        fetch: this.config.fetch,
        openPath: this.config.openPath,
        hfEndpoint: this.config.hfEndpoint,
        store: options.store === false ? null : this.config.models,
        allowUnverified: options.allowUnverified,
      };
      const cpuOnly = revive && this.config.gpuFallback && this.gpuCrashes.count >= 2;
      const gpu = options.gpuLayers === undefined && !cpuOnly ? await this.gpuPlacement(revive) : undefined;
      const file = await openModelFile(source, this.maxBytes, {
        ...opened,
        allowScalarKernels: options.allowScalarKernels,
        gpu,
      });
      // After the model, not while its bytes are checked: in Chromium, opening an OPFS file to write while the store
      // reads another was seen to wait for ever (a first visit stuck after "Checking the download").
      const projector =
        options.projector === undefined
          ? null
          : // the GPU engine's heap holds a small share of the model (checked above): the projector gets the rest
            await openProjector(options.projector, source, this.maxBytes - (gpu ? 0 : file.size), opened);
      const draft =
        options.draft === undefined ? null : await this.openDraft(options.draft, file, projector, opened, gpu);
      const promptState =
        state === undefined ? null : await openPromptState(state, { ...opened, maxBytes: this.maxBytes });
      const settings = {
        threads: this.config.loader.threads,
        cache: this.cacheConfig,
        store: await this.getStore(),
        promptState,
        projector,
        draft,
        heapBytes: this.memory64 ? MEMORY64_HEAP_BYTES : WASM32_HEAP_BYTES,
      };
      const into = { ...options, signal, onProgress };
      const onCpu = async (why: string) => {
        if (file.size > this.maxBytes) throw tooLargeForCpu(file.name, file.size, this.maxBytes, why);
        const session = await loadSession(await this.getLlama(true), file, { ...into, gpuLayers: 0 }, settings);
        session.info.warnings = [...(session.info.warnings ?? []), `every layer runs on the CPU: ${why}`];
        return session;
      };
      if (cpuOnly) {
        this.session = await onCpu(
          `the GPU engine crashed ${this.gpuCrashes.count} times (last: ${this.gpuCrashes.last})`,
        );
      } else {
        try {
          this.session = await loadSession(await this.getLlama(revive), file, into, settings);
        } catch (err) {
          if (!(this.config.gpuFallback && (err as EngineError).code === 'gpu_allocation_failed')) throw err;
          // The GPU could not hold it: a fresh module (the failed one trapped), every layer on the CPU.
          this.session = await onCpu(this.llama?.gpuFault?.message ?? (err as Error).message);
        }
      }
      this.loaded = request;
      return this.session.info;
    });
  }

  /** LoadOptions.draft opened and checked as a model, in the heap the model (and its projector) leave; its errors say
   * they are the draft's. */
  private async openDraft(
    source: LoadRequest['source'],
    model: ModelFile,
    projector: ModelFile | null,
    opened: SourceOptions,
    gpu: GpuPlacement | undefined,
  ): Promise<ModelFile> {
    // On the GPU engine the limit bounds each model's share of the heap (checked from its header), not the files.
    const left = this.maxBytes - (gpu ? 0 : model.size + (projector?.size ?? 0));
    if (left <= 0) {
      throw new ModelLoadError(
        'the model alone takes the whole memory budget (maxModelBytes): no room for a draft model',
        'too_large',
      );
    }
    try {
      return await openModelFile(source, left, { ...opened, gpu });
    } catch (err) {
      if (!(err instanceof ModelLoadError)) throw err;
      throw new ModelLoadError(`the draft model: ${err.message}`, err.code, err.details);
    }
  }

  /**
   * After a crash (a trap, the GPU lost mid-answer) the model is loaded again into a fresh module before the next
   * request — on the CPU if the GPU does not come back — and its conversations continue from their saved state.
   */
  private revive(): Promise<void> {
    if (this.live || !this.session || !this.loaded) return Promise.resolve();
    const request = this.loaded;
    if (!this.reviving && this.session.model.offloaded?.layers) {
      this.gpuCrashes.count++;
      this.gpuCrashes.last = this.session.llama.crashReason ?? 'no reason kept';
    }
    this.reviving ??= this.load(request, {}, true)
      .then(() => {})
      .finally(() => {
        this.reviving = null;
      });
    return this.reviving;
  }

  /**
   * Generates one completion, handing every chunk to control.onChunk (awaited: a slow consumer slows generation).
   * Resolves after the final chunk; rejects with AbortError, ContextFullError (before any chunk) or another
   * HearthError.
   */
  async complete(request: CompletionRequest, control: CallControl = {}): Promise<void> {
    await this.revive();
    const name = this.live?.info.name ?? '';
    request = await this.readMedia(request, control.signal);
    return this.scheduler.submit(Job.completion(request, control, name));
  }

  /** The request with its images and audio read (fetched, hashed, checked against the projector), before it is queued.
   * (Without a model, as is: the scheduler answers no_model.) */
  private async readMedia(request: CompletionRequest, signal?: AbortSignal): Promise<CompletionRequest> {
    const s = this.live;
    if (!s) return request;
    const p = s.projector;
    return resolveMedia(request, p ? { image: p.image, audio: p.audio } : null, { fetch: this.config.fetch, signal });
  }

  /**
   * The tokens the request's prompt takes, rendered and tokenized as complete() would (its media read and split by the
   * projector), without decoding anything. Between requests, as the other calls that use the model's tokenizer.
   */
  async countTokens(
    request: CompletionRequest | { text: string },
    control: CallControl = {},
  ): Promise<{ tokens: number }> {
    await this.revive();
    if (!('messages' in request)) {
      const { text } = request;
      return this.scheduler.exclusive(control.signal, async () => {
        const s = this.requireSession();
        return { tokens: s.llama.guard(() => s.model.tokenize(text, false, false)).length };
      });
    }
    const read = await this.readMedia(request, control.signal);
    return this.scheduler.exclusive(control.signal, async () => {
      const s = this.requireSession();
      const resolved = { ...read, onProgress: control.onProgress };
      return { tokens: s.llama.guard(() => s.prompts.prepare(resolved).tokens.length) };
    });
  }

  /** Embeddings of the texts, once the requests before have ended (see embed.ts). */
  async embed({ inputs }: { inputs: string[] }, control: CallControl = {}): Promise<EmbedResult> {
    await this.revive();
    return this.scheduler.exclusive(control.signal, async () => {
      const s = this.requireSession();
      const texts = inputs.map((t) => s.llama.guard(() => s.model.tokenize(t, true, false)));
      const { vectors, tokens } = await pooledOutputs(s, texts, 'embed');
      return { vectors: vectors.map((v) => Array.from(v)), tokens, model: s.info.name };
    });
  }

  /** A reranker's score of each document against the query (the first classifier output). */
  async rank(
    { query, documents }: { query: string; documents: string[] },
    control: CallControl = {},
  ): Promise<RankResult> {
    await this.revive();
    return this.scheduler.exclusive(control.signal, async () => {
      const s = this.requireSession();
      const { vectors, tokens } = await pooledOutputs(
        s,
        documents.map((d) => rerankTokens(s, query, d)),
        'rank',
      );
      return { scores: vectors.map((v) => v[0]!), tokens, model: s.info.name };
    });
  }

  async unload(): Promise<void> {
    await this.scheduler.exclusive(undefined, async () => this.unloadNow());
  }

  /**
   * Ends the engine at once (NodeEngine.terminate; a page's engine ends with its worker): the module's threads ended
   * and its heap left to be freed; a request in flight and every later call answer 'terminated'.
   */
  terminate(): void {
    this.terminated = true;
    this.llama?.end();
    this.llama = null;
    this.session = null;
    this.loaded = null;
  }

  private unloadNow() {
    this.session?.free();
    this.session = null;
    this.loaded = null;
  }

  async info(): Promise<BackendInfo> {
    // After a crash: the model back first (a failed reload is the next request's error, not this one's).
    await this.revive().catch(() => {});
    const llama = await this.getLlama(true);
    const s = this.live;
    const ctx = s?.ctx;
    return {
      backend: llama.gpu ? 'webgpu' : 'wasm',
      remote: null,
      input: s?.info.input ?? ['text'],
      build: this.config.loader.variant,
      buildReason: this.config.loader.reason + dotReason(llama.simdDot),
      threads: this.config.loader.threads,
      version: VERSION,
      llamaBuild: llama.llamaBuild,
      wasmSimd: llama.wasmSimd,
      model: s?.info ?? null,
      nCtx: ctx?.nCtx ?? 0,
      context:
        s && ctx
          ? {
              nCtx: ctx.nCtx,
              maxCtx: s.kv.maxCtx,
              dynamic: s.kv.dynamic,
              nParallel: s.nParallel,
              kvBytesPerToken: s.kv.kvBytesPerToken,
              budgetBytes: s.kv.budgetBytes,
            }
          : null,
      gpu: llama.gpu
        ? {
            adapter: llama.gpu,
            shaderPath: llama.gpuShaderF16 ? 'f16' : 'f32',
            subgroupMatrix: llama.gpuSubgroupMatrix,
            layers: s?.model.offloaded?.layers ?? 0,
            totalLayers: s?.model.offloaded?.of ?? 0,
            projector: s?.projector ? (s.projector.onGpu ? 'gpu' : 'cpu') : null,
          }
        : null,
      wasmHeap: { inUse: llama.heapInUse, peak: llama.heapPeak, size: llama.heap().buffer.byteLength },
      kvCache: ctx
        ? { typeK: ctx.params.typeK, typeV: ctx.params.typeV, flashAttention: ctx.params.flashAttn === 1 }
        : null,
      capabilities: {
        persistentKv: (await this.getStore()) !== null,
        batching: true,
        embeddings: true,
        contextShift: true,
        webgpu: typeof navigator !== 'undefined' && 'gpu' in navigator,
        threads: this.config.loader.variant.startsWith('mt'),
      },
      storage: this.config.models?.kind ?? null,
    };
  }

  /** The cache's figures; without a model, what IndexedDB holds. */
  async cacheStats(): Promise<CacheStats> {
    if (this.live) return this.live.cache.stats();
    const store = await this.getStore();
    if (store) await store.records().catch(() => {});
    return {
      ...storedStats(store),
      memory: { slots: 0, tokens: 0, systemPrompts: 0 },
      hits: { none: 0, memory: 0, indexeddb: 0, 'prompt-state': 0 },
      saves: { count: 0, bytes: 0, ms: 0 },
    };
  }

  async cacheClear({ conversation_id: id }: { conversation_id?: string }): Promise<void> {
    if (this.live) return this.live.cache.clear(id);
    const store = await this.getStore();
    if (store) await (id === undefined ? store.clear() : store.removeConversation(id));
  }

  async cacheFlush(): Promise<void> {
    await this.live?.cache.flush();
  }

  /** A prompt state file of the loaded model: the state of the prompt every conversation starting with `messages`
   * shares. */
  async cacheExport(request: ExportPromptRequest, control: CallControl = {}): Promise<Blob> {
    if (!Array.isArray(request?.messages) || !request.messages.length) {
      throw new InvalidRequestError(
        'exportPrompt: messages must hold the messages every conversation starts with (a system message)',
        'invalid_parameter',
        { param: 'messages' },
      );
    }
    await this.revive();
    return this.scheduler.exclusive(control.signal, async () => {
      const s = this.requireSession();
      const { messages, tools, templateKwargs } = resolveRequest({
        messages: request.messages,
        tools: request.tools,
        chat_template_kwargs: request.chat_template_kwargs,
      });
      const tokens = s.llama.guard(() => s.prompts.sharedPrefix(messages, tools, templateKwargs));
      if (!tokens.length) {
        throw new InvalidRequestError(
          'exportPrompt: these messages render no tokens every conversation shares',
          'invalid_parameter',
          { param: 'messages' },
        );
      }
      const data = await prefillState(s, tokens, control);
      const kv = s.ctx.params;
      return writePromptState(
        {
          model: s.identity,
          llama: s.llama.llamaBuild,
          typeK: kv.typeK,
          typeV: kv.typeV,
          flashAttn: kv.flashAttn,
          memory: s.info.memory.kind,
          tokens: Array.from(tokens),
        },
        data,
      );
    });
  }

  async modelsFetch(
    { source, options }: LoadRequest,
    control: CallControl = {},
  ): Promise<{ id: string; folder: string; files: string[] }> {
    if (!this.config.models || options.store === false || !isWebSource(source)) {
      throw new InvalidRequestError(
        'only URL and { hf } sources go through the model store, and only where the engine has one',
        'no_store',
      );
    }
    return this.config.models.ensure(source, {
      signal: control.signal,
      onProgress: control.onProgress,
      fetch: this.config.fetch,
      hfEndpoint: this.config.hfEndpoint,
      maxBytes: this.maxBytes,
      allowUnverified: options.allowUnverified,
    });
  }

  async modelsList(): Promise<StoredModel[]> {
    return this.config.models ? this.config.models.list() : [];
  }

  async modelsDelete({ id }: { id: StoredModelRef }): Promise<boolean> {
    const hf = typeof id === 'object' && id !== null && 'hf' in id ? id.hf : null;
    if (typeof id !== 'string' && !(hf && typeof hf.repo === 'string' && typeof hf.file === 'string')) {
      throw new InvalidRequestError(
        'models.delete(id): id must be an id models.list() gives, or the URL or { hf } source the model was loaded from',
        'invalid_parameter',
      );
    }
    return this.config.models ? this.config.models.delete(id, this.config.hfEndpoint) : false;
  }

  async modelsUsage(): Promise<ModelStoreUsage> {
    return this.config.models ? this.config.models.usage() : { models: 0, used: null, quota: null, persisted: null };
  }
}
