// The 'wllama' backend: @wllama/wllama 3.8.1 (llama.cpp's server code compiled with its WebGPU backend) behind Hearth's
// Backend interface, so the public API, its validation and its streams are the same as with the wasm engine. Hearth
// renders the chat template and reads the reply itself (chat/template.ts, chat/reply-plan.ts), exactly as for the wasm
// engine: wllama's own chat path ignores a required tool_choice, and its Jinja differs from jinja2. wllama generates
// from the rendered prompt with Hearth's grammar, stop strings, sampling and logprobs. Not offered here (`supports`,
// refused by the router with a typed error): KV state (no persistence, no conversation cache across reloads), batching,
// embeddings, rerank, context overflow other than 'stop', and the load options that size the wasm engine's KV cache.
// Its built ES module by path: the package's "main" names an index.js it does not ship (bundlers that try .ts find its
// TypeScript sources; webpack finds nothing).
// Here: what it supports, the model's files checked and whether it fits, its load, the self-test's probe, info. A
// completion is generate.ts; what the model's GGUF header says (ModelInfo, chat template, largest tensor) model-info.ts.
import type { Wllama } from '@wllama/wllama/esm/index.js';
import type {
  Backend,
  BackendInfo,
  CallControl,
  CompletionRequest,
  EmbedResult,
  LoadRequest,
  RankResult,
  Supports,
} from '../../contract.ts';
import { checkModelFile } from '../../core/models/check.ts';
import { readGgufHeader } from '../../core/gguf/reader.ts';
import { blobFile } from '../../core/models/file.ts';
import { formatBytes } from '../../core/bytes.ts';
import { AbortError, InvalidRequestError, ModelLoadError } from '../../errors.ts';
import type { ModelInfo } from '../../types.ts';
import { checkCall } from '../supports.ts';
import { checkContextSize } from '../../core/options.ts';
import { VERSION } from '../../core/build.ts';
import type { ModelBlobs } from '../../core/models/page-files.ts';
import { generate } from './generate.ts';
import { type ChatFormat, chatFormat, largestTensor, modelInfo } from './model-info.ts';

export interface WllamaOptions {
  /** URL of wllama.wasm (served with Hearth's assets; never a CDN). */
  wasmUrl: string;
  threads: number;
  maxModelBytes: number;
  /** The adapter's largest storage buffer binding: a larger tensor does not fit. null: no adapter (CPU build). */
  bufferLimit: number | null;
  /** The model's files on this page (core/models/page-files.ts). */
  files: (request: LoadRequest, control: CallControl) => Promise<ModelBlobs>;
}

const DEFAULT_CTX = 4096;

export class WllamaBackend implements Backend {
  readonly kind = 'wllama';
  readonly supports: Supports = {
    // allowUnverified and store are the model store's (the files come from it); allowScalarKernels is a permission
    // wllama needs no permission for (its kernels cover every type).
    loadOptions: {
      nCtx: true,
      cacheTypeK: true,
      cacheTypeV: true,
      store: true,
      allowUnverified: true,
      allowScalarKernels: true,
      nParallel: (n) => n === 1, // one sequence: wllama does not batch
    },
    contextOverflow: ['stop'],
    embeddings: false,
    rerank: false,
    media: false,
    speculative: false,
  };
  private wllama: Wllama | null = null;
  private model: ModelInfo | null = null;
  /** The model's chat template and reply formats (from its GGUF), and its BOS text. */
  private chat: ChatFormat | null = null;
  private nCtx = 0;

  constructor(private readonly opts: WllamaOptions) {}

  private async instance(): Promise<Wllama> {
    if (!this.wllama) {
      const { Wllama } = await import('@wllama/wllama/esm/index.js');
      const w = new Wllama({ default: this.opts.wasmUrl }, { suppressNativeLog: true, logger: quietLogger });
      w.setCompat(null); // its compat build comes from a CDN: never fetch it
      this.wllama = w;
    }
    return this.wllama;
  }

  /** The last load's files, checked (fit), for the load that follows. */
  private prepared: { request: LoadRequest; parts: ModelBlobs } | null = null;

  /** The model's files on the page, checked as the wasm engine checks them (but for weight types: wllama has
   * kernels of its own). */
  private async files(request: LoadRequest, control: CallControl): Promise<ModelBlobs> {
    if (this.prepared?.request === request) return this.prepared.parts;
    const parts = await this.opts.files(request, control);
    await checkModelFile(blobFile(parts), this.opts.maxModelBytes, { signal: control.signal, tensorTypes: false });
    this.prepared = { request, parts };
    return parts;
  }

  /** A model fits unless a tensor exceeds the adapter's storage buffer binding. */
  async fit(request: LoadRequest, control: CallControl = {}) {
    const parts = await this.files(request, control);
    // The wasm engine, if it takes the model instead, reads these bytes rather than the source again.
    const next = parts.length === 1 ? { ...request, source: parts[0]!.blob } : request;
    this.prepared = { request: next, parts };
    const largest = await largestTensor(parts);
    const limit = this.opts.bufferLimit;
    return {
      request: next,
      refusal:
        limit && largest > limit
          ? `its largest tensor (${formatBytes(largest)}) exceeds the adapter's storage buffer limit (${formatBytes(limit)})`
          : null,
    };
  }

  async load(request: LoadRequest, control: CallControl = {}): Promise<ModelInfo> {
    const parts = await this.files(request, control);
    this.prepared = null;
    await this.unload();
    const w = await this.instance();
    const size = parts.reduce((n, p) => n + p.blob.size, 0);
    const blob = parts[0]!.blob;
    const header = await readGgufHeader(
      async (o, l) => new Uint8Array(await blob.slice(o, o + l).arrayBuffer()),
      blob.size,
    );
    const arch = header.kv.get('general.architecture')?.value;
    const nCtxTrain = Number(header.kv.get(`${String(arch)}.context_length`)?.value ?? 0);
    checkContextSize(request.options.nCtx, nCtxTrain);
    control.onProgress?.({ phase: 'load', loaded: 0, total: size });
    const nCtx = request.options.nCtx ?? (nCtxTrain > 0 ? Math.min(DEFAULT_CTX, nCtxTrain) : DEFAULT_CTX);
    try {
      await w.loadModel(
        parts.map((p) => p.blob),
        {
          n_ctx: nCtx,
          n_threads: this.opts.threads,
          n_parallel: 1,
          jinja: true,
          ...(request.options.cacheTypeK ? { cache_type_k: request.options.cacheTypeK } : {}),
          ...(request.options.cacheTypeV ? { cache_type_v: request.options.cacheTypeV } : {}),
        },
      );
    } catch (err) {
      await this.unload();
      throw new ModelLoadError(`wllama could not load ${parts[0]!.name}: ${(err as Error).message}`, 'unsupported', {
        backend: 'wllama',
      });
    }
    if (control.signal?.aborted) {
      await this.unload();
      throw new AbortError('model load aborted');
    }
    this.nCtx = nCtx;
    this.model = modelInfo(w, header, parts[0]!.name, size);
    this.chat = chatFormat(header, this.model);
    control.onProgress?.({ phase: 'load', loaded: size, total: size });
    return this.model;
  }

  async complete(request: CompletionRequest, control: CallControl = {}): Promise<void> {
    const w = this.require();
    await generate(w, this.chat!, this.model!.name, this.nCtx, request, control);
  }

  /** wllama 3 has no tokenizer call (it runs llama-server's completion code): not asked. */
  async countTokens(): Promise<{ tokens: number }> {
    throw new InvalidRequestError(
      "counting a prompt's tokens needs the wasm or GPU engine: wllama does not tokenize on its own",
      'unsupported_by_backend',
    );
  }

  /**
   * The probe's next-token log-probabilities after `prompt` (raw text, no template), likeliest first. For the
   * self-test, which compares them with the wasm engine's.
   */
  async promptLogprobs(prompt: string, top: number): Promise<Array<{ token: string; logprob: number }>> {
    const w = this.require();
    const res = await w.createCompletion({ prompt, max_tokens: 1, temperature: 0, logprobs: top, stream: false });
    // llama-server's shape: logprobs.content[0].top_logprobs (its typings still show OpenAI's legacy one).
    const logprobs = res.choices[0]?.logprobs as {
      content?: Array<{ top_logprobs: Array<{ token: string; logprob: number }> }>;
    } | null;
    return (logprobs?.content?.[0]?.top_logprobs ?? [])
      .map(({ token, logprob }) => ({ token, logprob }))
      .sort((a, b) => b.logprob - a.logprob);
  }

  async embed(): Promise<EmbedResult> {
    checkCall(this, 'embeddings');
    throw new Error('unreachable');
  }

  async rank(): Promise<RankResult> {
    checkCall(this, 'rerank');
    throw new Error('unreachable');
  }

  /** What engine.info() reports while this backend holds the model (the router adds the selection and the store). */
  async info(): Promise<BackendInfo> {
    return {
      backend: 'wllama',
      remote: null,
      input: ['text'],
      // wllama's one wasm build runs threads (shared memory) where the page may: createEngine gave 1 where not.
      build: this.opts.threads > 1 ? 'mt' : 'st',
      buildReason: 'the WebGPU backend (@wllama/wllama) runs its own build',
      threads: this.opts.threads,
      wasmSimd: true,
      version: VERSION,
      llamaBuild: `wllama ${this.wllama ? `llama.cpp ${wllamaVersion(this.wllama)}` : ''}`.trim(),
      model: this.model,
      nCtx: this.nCtx,
      context: null,
      gpu: null,
      wasmHeap: null,
      kvCache: null,
      capabilities: {
        persistentKv: false,
        batching: false,
        embeddings: false,
        contextShift: false,
        webgpu: typeof navigator !== 'undefined' && 'gpu' in navigator,
        threads: this.opts.threads > 1,
      },
      storage: null,
    };
  }

  async unload(): Promise<void> {
    this.model = null;
    this.chat = null;
    const w = this.wllama;
    this.wllama = null;
    if (w) await w.exit().catch(() => {});
  }

  private require(): Wllama {
    if (!this.wllama || !this.model) {
      throw new InvalidRequestError('no model is loaded: call engine.load(source) first', 'no_model');
    }
    return this.wllama;
  }
}

function wllamaVersion(w: Wllama): string {
  return (w.constructor as unknown as { getLibllamaVersion(): string }).getLibllamaVersion();
}

const quietLogger = {
  debug: () => {},
  log: () => {},
  warn: (...a: unknown[]) => console.warn('[hearth/wllama]', ...a),
  error: (...a: unknown[]) => console.error('[hearth/wllama]', ...a),
};
