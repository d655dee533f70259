// The engine: loads a model into the wasm build of llama.cpp and answers chat completions. It runs wherever the
// wasm runs — in the browser's Web Worker (workers/engine.worker.ts exposes it to the page) and in Node (tests,
// benchmarks). One request decodes at a time; others wait in FIFO order.
import { AbortError, ContextFullError, EngineError, HearthError, InvalidRequestError, ModelLoadError } from '../errors.ts';
import { Channel } from '../channel.ts';
import type {
  ChatCompletion, ChatCompletionChunk, ChatCompletionCreateParams, ChatCompletions, EngineInfo, FinishReason,
  HearthEngine, LoadOptions, ModelInfo, ModelSource,
} from '../types.ts';
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
}

export const DEFAULT_MAX_MODEL_BYTES = 3.5 * 1024 ** 3;
const DEFAULT_N_CTX = 4096;
const N_BATCH = 512;
const SEQ = 0;

interface Loaded {
  model: LlamaModel;
  ctx: LlamaContext;
  template: ChatTemplate;
  bosText: string;
  eog: Set<number>;
  info: ModelInfo;
}

export type ChunkSink = (c: ChatCompletionChunk) => void | Promise<void>;

export class Engine implements HearthEngine {
  private llama: Llama | null = null;
  private loaded: Loaded | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly maxModelBytes: number;

  readonly chat: { readonly completions: ChatCompletions };

  constructor(private readonly config: EngineConfig) {
    this.maxModelBytes = config.maxModelBytes ?? DEFAULT_MAX_MODEL_BYTES;
    const create = (params: ChatCompletionCreateParams) => this.create(params);
    this.chat = { completions: { create } as ChatCompletions };
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
      this.loaded = await this.loadChecked(file, options);
      return this.loaded.info;
    });
  }

  private async loadChecked(file: ModelFile, options: LoadOptions): Promise<Loaded> {
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
    try {
      const shape = model.shape();
      const nCtx = Math.max(16, Math.min(options.nCtx ?? DEFAULT_N_CTX, shape.nCtxTrain || DEFAULT_N_CTX));
      const ctx = this.guard(() => new LlamaContext(model!, {
        nCtx, nBatch: N_BATCH, nUbatch: N_BATCH, nSeqMax: 1, threads: this.config.loader.threads,
        typeK: options.cacheTypeK ?? 'f16', typeV: options.cacheTypeV ?? 'f16', flashAttn: -1,
      }));
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
      return { model, ctx, template, bosText: text(model.bos), eog: model.eogTokens, info };
    } catch (err) {
      if (this.llama) model.free();
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
      capabilities: {
        persistentKv: false,
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

  private async generate(req: ResolvedRequest, sink: ChunkSink, signal: AbortSignal | undefined): Promise<void> {
    const l = this.loaded;
    if (!l) throw new InvalidRequestError('no model is loaded: call engine.load(source) first', 'no_model');
    const { model, ctx } = l;
    const prompt = l.template.render(req.messages, { tools: req.tools });
    // Templates that write the BOS text themselves must not get a second BOS from the tokenizer.
    const addSpecial = !(l.bosText && prompt.startsWith(l.bosText));
    const tokens = this.guard(() => model.tokenize(prompt, addSpecial, true));
    if (tokens.length + 1 > ctx.nCtx) {
      throw new ContextFullError(
        `the prompt is ${tokens.length} tokens but the context holds ${ctx.nCtx}: shorten the conversation or load the model with a larger nCtx`,
        { promptTokens: tokens.length, nCtx: ctx.nCtx });
    }
    const meta = newCompletionMeta(l.info.name);
    const sampler = this.guard(() => new Sampler(model, req.sampler));
    try {
      const tStart = now();
      this.guard(() => ctx.clear());
      // Penalties look back over the prompt too (as llama.cpp's own tools do).
      for (const t of tokens.subarray(Math.max(0, tokens.length - req.sampler.repeatLastN))) sampler.accept(t);

      let lastOutput = 0;
      for (let i = 0; i < tokens.length; i += N_BATCH) {
        const part = tokens.subarray(i, Math.min(i + N_BATCH, tokens.length));
        const isLast = i + part.length === tokens.length;
        const status = this.guard(() => ctx.decode(part, range(i, part.length), fill(part.length, SEQ),
          Array.from(part, (_, k) => isLast && k === part.length - 1)));
        if (status !== 0) throw new EngineError(`llama_decode failed with status ${status} during the prompt`, 'decode_failed');
        lastOutput = part.length - 1;
        await yieldToEventLoop();
        if (signal?.aborted) throw new AbortError();
      }

      await sink(chunk(meta, { role: 'assistant', content: '' }));
      const detok = new Detokenizer((t) => model.tokenBytes(t, false));
      const stops = new StopMatcher(req.stop);
      let tFirst = 0;
      let n = 0;
      let pos = tokens.length;
      let finish: FinishReason = 'stop';
      let stoppedByString = false;
      const emit = async (text: string) => {
        if (text) await sink(chunk(meta, { content: text }));
      };
      for (;;) {
        const tok = this.guard(() => sampler.sample(ctx, lastOutput));
        if (n === 0) tFirst = now();
        if (l.eog.has(tok)) break;
        n++;
        const { emit: text, stopped } = stops.push(detok.push(tok));
        await emit(text);
        if (stopped) {
          stoppedByString = true;
          break;
        }
        if (req.maxTokens !== null && n >= req.maxTokens) {
          finish = 'length';
          break;
        }
        if (pos + 1 > ctx.nCtx) {
          finish = 'length'; // the context is full
          break;
        }
        const status = this.guard(() => ctx.decode([tok], [pos], [SEQ], [true]));
        if (status === 1) {
          finish = 'length';
          break;
        }
        if (status !== 0) throw new EngineError(`llama_decode failed with status ${status}`, 'decode_failed');
        pos++;
        lastOutput = 0;
        await yieldToEventLoop();
        if (signal?.aborted) throw new AbortError();
      }
      if (!stoppedByString) {
        // Bytes of an unfinished character, and text held back in case it began a stop string.
        const tail = stops.push(detok.flush());
        await emit(tail.emit + (tail.stopped ? '' : stops.flush()));
      }
      const tEnd = now();
      const usage = {
        prompt_tokens: tokens.length, completion_tokens: n, total_tokens: tokens.length + n,
        prompt_tokens_details: { cached_tokens: 0 },
      };
      const timings = {
        prompt_n: tokens.length, prompt_ms: round(tFirst - tStart), predicted_n: n, predicted_ms: round(tEnd - tFirst),
        cache_n: 0, cache_source: 'none' as const,
      };
      await sink(chunk(meta, {}, finish, { usage, timings }));
    } finally {
      if (this.llama) sampler.free();
    }
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
