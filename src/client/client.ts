// The page side: createEngine() starts the engine worker and returns a HearthEngine that forwards every call to it.
import * as Comlink from 'comlink';
import { Channel } from '../channel.ts';
import { CompletionAssembler } from '../engine/completion.ts';
import { resolveRequest } from '../engine/request.ts';
import { AbortError, EngineError, fromWire, InvalidRequestError } from '../errors.ts';
import type { EngineHostApi, Result, WireParams } from '../protocol.ts';
import type {
  ChatCompletion, ChatCompletionChunk, ChatCompletionCreateParams, ChatCompletions, EngineCache, EngineInfo, EngineOptions,
  HearthEngine, LoadOptions, ModelInfo, ModelSource,
} from '../types.ts';

/** Half the logical cores (ggml wants physical cores and spins while waiting), at most 8, at least 1. */
export function defaultThreads(): number {
  const cores = (typeof navigator !== 'undefined' && navigator.hardwareConcurrency) || 2;
  return Math.max(1, Math.min(8, Math.floor(cores / 2)));
}

export interface HearthClient extends HearthEngine {
  /** Stops the worker at once; the engine cannot be used afterwards. */
  terminate(): void;
}

export async function createEngine(options: EngineOptions = {}): Promise<HearthClient> {
  const backend = options.backend ?? 'auto';
  if (backend === 'webgpu') {
    throw new InvalidRequestError('backend "webgpu" is not available yet; use "auto" or "wasm"', 'unsupported_backend');
  }
  if (backend !== 'auto' && backend !== 'wasm') {
    throw new InvalidRequestError(`backend must be "auto", "wasm" or "webgpu", got ${JSON.stringify(backend)}`, 'invalid_parameter');
  }
  // Threads need SharedArrayBuffer, which browsers give only to cross-origin isolated pages (COOP + COEP headers).
  const isolated = globalThis.crossOriginIsolated === true && typeof SharedArrayBuffer !== 'undefined';
  let threads = Math.max(1, Math.min(16, Math.floor(options.threads ?? defaultThreads())));
  if (!isolated && threads > 1) {
    if (options.threads !== undefined) {
      console.warn('[hearth] this page is not cross-origin isolated (COOP/COEP headers), so llama.cpp runs on 1 thread');
    }
    threads = 1;
  }
  const base = typeof document !== 'undefined' ? document.baseURI : globalThis.location.href;
  const assetsUrl = new URL(options.assetsUrl ?? '/hearth/', base).href.replace(/\/?$/, '/');
  const worker = new Worker(new URL('engine.worker.js', assetsUrl));
  const client = new Client(worker, Comlink.wrap<EngineHostApi>(worker));
  // One thread needs no pthreads: the single-thread build avoids their shared-memory overhead.
  const variant = isolated && threads > 1 ? 'mt' : 'st';
  await client.start({ variant, threads, assetsUrl, maxModelBytes: options.maxModelBytes, cache: options.cache });
  return client;
}

class Client implements HearthClient {
  readonly chat: { readonly completions: ChatCompletions };
  readonly cache: EngineCache;
  private nextId = 1;
  private dead: Error | null = null;
  private pending = new Set<(err: Error) => void>();

  constructor(private readonly worker: Worker, private readonly remote: Comlink.Remote<EngineHostApi>) {
    const create = (params: ChatCompletionCreateParams) => this.create(params);
    this.chat = { completions: { create } as ChatCompletions };
    this.cache = {
      stats: () => this.call(this.remote.cacheStats()),
      clear: (opts = {}) => this.call(this.remote.cacheClear(opts.conversation_id)),
      flush: () => this.call(this.remote.cacheFlush()),
    };
    worker.addEventListener('error', (e) => {
      this.fail(new EngineError(`the engine worker failed: ${e.message || 'it could not be started (is engine.worker.js served?)'}`, 'worker_failed'));
    });
  }

  private fail(err: Error) {
    this.dead ??= err;
    for (const reject of this.pending) reject(err);
    this.pending.clear();
  }

  /** Awaits a worker call; rejects if the worker dies or `signal` aborts first. */
  private call<T>(promise: Promise<Result<T>>, abort?: { signal?: AbortSignal; id: number }): Promise<T> {
    if (this.dead) return Promise.reject(this.dead);
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        this.remote.abort(abort!.id);
        done(() => reject(new AbortError()));
      };
      const done = (settle: () => void) => {
        this.pending.delete(reject);
        abort?.signal?.removeEventListener('abort', onAbort);
        settle();
      };
      this.pending.add(reject);
      if (abort?.signal?.aborted) return onAbort();
      abort?.signal?.addEventListener('abort', onAbort, { once: true });
      promise.then(
        (r) => done(() => (r.ok ? resolve(r.value) : reject(fromWire(r.error)))),
        (err) => done(() => reject(err)),
      );
    });
  }

  async start(init: Parameters<EngineHostApi['init']>[0]) {
    await this.call(this.remote.init(init));
  }

  load(source: ModelSource, options: LoadOptions = {}): Promise<ModelInfo> {
    const { signal, onProgress, ...wire } = options;
    const id = this.nextId++;
    const progress = onProgress ? Comlink.proxy(onProgress) : undefined;
    return this.call(this.remote.load(id, source, wire, progress), { signal, id });
  }

  private async create(params: ChatCompletionCreateParams): Promise<ChatCompletion | AsyncIterable<ChatCompletionChunk>> {
    resolveRequest(params); // bad parameters reject here, on the page, before anything is queued
    const { signal, onProgress, ...wire } = params;
    const id = this.nextId++;
    const progress = onProgress ? Comlink.proxy(onProgress) : undefined;
    if (!params.stream) {
      const assembler = new CompletionAssembler();
      const receive = Comlink.proxy(async (c: ChatCompletionChunk) => assembler.add(c));
      await this.call(this.remote.complete(id, wire as WireParams, receive, progress), { signal, id });
      return assembler.result();
    }
    const channel = new Channel<ChatCompletionChunk>(16, () => this.remote.abort(id));
    const receive = Comlink.proxy((c: ChatCompletionChunk) => channel.push(c));
    this.call(this.remote.complete(id, wire as WireParams, receive, progress), { signal, id }).then(() => channel.end(), (err) => channel.fail(err));
    await channel.ready;
    return channel;
  }

  info(): Promise<EngineInfo> {
    return this.call(this.remote.info());
  }

  unload(): Promise<void> {
    return this.call(this.remote.unload());
  }

  terminate(): void {
    this.worker.terminate();
    this.fail(new EngineError('the engine was terminated', 'terminated'));
  }
}
