// The 'wllama' backend: @wllama/wllama 3.8.1 (llama.cpp's server code compiled with its WebGPU backend) behind Hearth's
// Backend interface, so the public API, its validation and its streams are the same as with the wasm engine. Hearth
// renders the chat template and reads the reply itself (chat/template.ts, chat/plan.ts), exactly as for the wasm
// engine: wllama's own chat path ignores a required tool_choice, and its Jinja differs from jinja2. wllama generates
// from the rendered prompt with Hearth's grammar, stop strings, sampling and logprobs. Not offered here (`supports`,
// refused by the router with a typed error): KV state (no persistence, no conversation cache across reloads), batching,
// embeddings, rerank, context overflow other than 'stop', and the load options that size the wasm engine's KV cache.
// Its built ES module by path: the package's "main" names an index.js it does not ship (bundlers that try .ts find its
// TypeScript sources; webpack finds nothing).
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
import { newCompletionMeta } from '../../core/chat/completion.ts';
import { ReplyPlanner } from '../../core/chat/plan.ts';
import { ReplyWriter } from '../../core/chat/reply.ts';
import { ChatTemplate } from '../../core/chat/template.ts';
import { checkModelFile } from '../../core/models/check.ts';
import { type GgufHeader, readGgufHeader, tensorBytes } from '../../core/gguf/reader.ts';
import { blobFile } from '../../core/models/file.ts';
import { formatBytes } from '../../core/bytes.ts';
import {
  AbortError,
  ContextFullError,
  EngineError,
  HearthError,
  InvalidRequestError,
  ModelLoadError,
} from '../../errors.ts';
import type { FinishReason, ModelInfo, Timings, TokenLogprob, Usage } from '../../types.ts';
import { checkCall } from '../supports.ts';
import { checkContextSize } from '../../core/options.ts';
import { VERSION } from '../../core/build.ts';
import type { ModelBlobs } from '../../core/models/page-files.ts';

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
  };
  private wllama: Wllama | null = null;
  private model: ModelInfo | null = null;
  /** The model's chat template and reply formats (from its GGUF), and its BOS text. */
  private chat: { template: ChatTemplate; planner: ReplyPlanner; bos: string } | null = null;
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
    const chat = this.chat!;
    let prompt = chat.template.render(request.messages, { tools: request.tools, kwargs: request.templateKwargs });
    const plan = chat.planner.plan(request, prompt);
    // wllama's tokenizer adds the BOS itself: a template that writes it would give two.
    if (chat.bos && w.mustAddBosToken() && prompt.startsWith(chat.bos)) prompt = prompt.slice(chat.bos.length);
    const s = request.sampler;
    const params = {
      prompt,
      stream: true as const,
      abortSignal: control.signal,
      cache_prompt: true,
      max_tokens: request.maxTokens ?? undefined,
      stop: request.stop.length ? request.stop : undefined,
      temperature: s.temperature,
      top_p: s.topP,
      top_k: s.topK,
      min_p: s.minP,
      seed: s.seed,
      repeat_penalty: s.repeatPenalty,
      repeat_last_n: s.repeatLastN,
      presence_penalty: s.presencePenalty,
      frequency_penalty: s.frequencyPenalty,
      ...(plan.grammar ? { grammar: plan.grammar } : {}),
      // The format's markers come out as text, for the parser (llama-server's preserved_tokens).
      ...(plan.preserved.size ? { preserved_tokens: [...plan.preserved.values()] } : {}),
      // llama-server gives no log-probabilities for 0 alternatives: ask for one and drop it.
      ...(request.logprobs !== null ? { logprobs: Math.max(1, request.logprobs) } : {}),
    };
    const reply = new ReplyWriter(newCompletionMeta(this.model!.name), {
      parse: plan.parse,
      logprobs: request.logprobs !== null,
      parallelToolCalls: request.parallelToolCalls,
    });
    await control.onChunk?.(reply.open());
    let finish: FinishReason = 'stop';
    let usage: Usage | null = null;
    let timings: Timings | null = null;
    try {
      const stream = (await w.createCompletion(params as never)) as unknown as AsyncIterable<WllamaChunk>;
      for await (const c of stream) {
        if (control.signal?.aborted) break; // wllama may yield what it had already generated; the caller stopped reading
        const choice = c.choices[0];
        if (choice) {
          for (const t of choice.logprobs?.content ?? []) reply.logprob(tokenLogprob(t, request.logprobs ?? 0));
          const c = reply.push(choice.text ?? '');
          if (c) await control.onChunk?.(c);
          if (choice.finish_reason === 'length') finish = 'length';
        }
        if (c.usage) {
          usage = {
            ...c.usage,
            prompt_tokens_details: { cached_tokens: c.usage.prompt_tokens_details?.cached_tokens ?? 0 },
          };
        }
        if (c.timings) {
          timings = {
            prompt_n: c.timings.prompt_n,
            prompt_ms: c.timings.prompt_ms,
            predicted_n: c.timings.predicted_n,
            predicted_ms: c.timings.predicted_ms,
            cache_n: c.timings.cache_n,
            cache_source: c.timings.cache_n > 0 ? 'memory' : 'none',
          };
        }
      }
    } catch (err) {
      throw hearthError(err, control.signal, this.nCtx);
    }
    if (control.signal?.aborted) throw new AbortError();
    usage ??= {
      prompt_tokens: timings?.prompt_n ?? 0,
      completion_tokens: timings?.predicted_n ?? 0,
      total_tokens: 0,
      prompt_tokens_details: { cached_tokens: timings?.cache_n ?? 0 },
    };
    usage.total_tokens ||= usage.prompt_tokens + usage.completion_tokens;
    timings ??= {
      prompt_n: usage.prompt_tokens,
      prompt_ms: 0,
      predicted_n: usage.completion_tokens,
      predicted_ms: 0,
      cache_n: 0,
      cache_source: 'none',
    };
    await control.onChunk?.(reply.close(finish, { usage, timings }).chunk);
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

/** One streamed chunk of llama-server's OpenAI-compatible completion, as wllama yields it. */
interface WllamaChunk {
  choices: Array<{
    text: string;
    finish_reason: 'stop' | 'length' | null;
    logprobs?: { content?: ServerLogprob[] } | null;
  }>;
  usage?: {
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    prompt_tokens_details?: { cached_tokens: number };
  } | null;
  timings?: { prompt_n: number; prompt_ms: number; predicted_n: number; predicted_ms: number; cache_n: number };
}

interface ServerLogprob {
  token: string;
  logprob: number;
  bytes?: number[];
  top_logprobs?: Array<{ token: string; logprob: number; bytes?: number[] }>;
}

/** llama-server's log-probability entry as OpenAI's, with `top` alternatives. */
function tokenLogprob(t: ServerLogprob, top: number): TokenLogprob {
  const entry = (e: { token: string; logprob: number; bytes?: number[] }) => ({
    token: e.token,
    logprob: e.logprob,
    bytes: e.bytes ?? Array.from(new TextEncoder().encode(e.token)),
  });
  return { ...entry(t), top_logprobs: (t.top_logprobs ?? []).slice(0, top).map(entry) };
}

function hearthError(err: unknown, signal: AbortSignal | undefined, nCtx: number): HearthError {
  if (err instanceof HearthError) return err;
  const e = err as { name?: string; type?: string; message?: string };
  if (signal?.aborted || e.name === 'AbortError' || e.name === 'WllamaAbortError') return new AbortError();
  if (e.type === 'kv_cache_full' || /context|kv cache/i.test(e.message ?? '')) {
    return new ContextFullError(`the conversation does not fit the context (wllama: ${e.message})`, {
      promptTokens: 0,
      nCtx,
    });
  }
  return new EngineError(`wllama failed: ${e.message ?? String(err)}`, 'backend_error', { backend: 'wllama' });
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

/** The size of the model's largest tensor, from its GGUF headers. */
async function largestTensor(parts: ModelBlobs): Promise<number> {
  let largest = 0;
  for (const { blob } of parts) {
    const header = await readGgufHeader(
      async (o, l) => new Uint8Array(await blob.slice(o, o + l).arrayBuffer()),
      blob.size,
      { skipArrays: true },
    );
    for (const t of header.tensors) largest = Math.max(largest, tensorBytes(t.type, t.dims) ?? 0);
  }
  return largest;
}

/** ModelInfo from the GGUF header (Hearth's reader) and what wllama reports. */
function modelInfo(w: Wllama, header: GgufHeader, fileName: string, size: number): ModelInfo {
  const ctx = w.getLoadedContextInfo();
  const meta = ctx.metadata ?? {};
  const kv = (k: string) => header.kv.get(k)?.value;
  const arch = String(kv('general.architecture') ?? meta['general.architecture'] ?? 'unknown');
  const num = (k: string) => Number(kv(`${arch}.${k}`) ?? 0);
  const ssm = [...header.kv.keys()].some((k) => k.startsWith(`${arch}.ssm.`));
  const swa = num('attention.sliding_window');
  let nParams = 0;
  for (const t of header.tensors) nParams += t.dims.reduce((a, b) => a * b, 1);
  return {
    name: String(kv('general.name') ?? fileName),
    description: '',
    architecture: arch,
    sizeBytes: size,
    nParams,
    nCtxTrain: ctx.n_ctx_train,
    nEmbd: ctx.n_embd,
    nLayer: ctx.n_layer,
    nHead: num('attention.head_count'),
    nHeadKv: num('attention.head_count_kv') || num('attention.head_count'),
    nVocab: ctx.n_vocab,
    bosToken: ctx.token_bos,
    eosToken: ctx.token_eos,
    eogTokens: ctx.list_tokens_eog,
    chatTemplate: typeof kv('tokenizer.chat_template') === 'string' ? String(kv('tokenizer.chat_template')) : null,
    memory: {
      kind: ssm ? (num('attention.head_count') ? 'hybrid' : 'recurrent') : swa ? 'swa' : 'attention',
      swaWindow: swa,
    },
    metadata: meta,
  };
}

/** llama.cpp's token type of control tokens (special: written as text only when asked). */
const CONTROL = 3;

/** The chat template and reply planner, from the vocabulary in the GGUF (wllama has no tokenizer API). */
function chatFormat(header: GgufHeader, model: ModelInfo) {
  const tokens = header.kv.get('tokenizer.ggml.tokens')?.value;
  const types = header.kv.get('tokenizer.ggml.token_type')?.value;
  const list = (v: unknown) => (v && typeof v === 'object' && 'values' in v ? (v as { values: unknown[] }).values : []);
  const texts = list(tokens) as string[];
  const kinds = list(types) as number[];
  const control = new Map<string, number>();
  kinds.forEach((kind, id) => {
    if (kind === CONTROL) control.set(texts[id]!, id);
  });
  const text = (id: number) => (id >= 0 ? (texts[id] ?? '') : '');
  const bos = text(model.bosToken);
  const template = new ChatTemplate(model.chatTemplate, { bos, eos: text(model.eosToken) });
  if (template.warning) console.warn(`[hearth] ${template.warning}`);
  return { template, planner: new ReplyPlanner(template.source, (t) => control.get(t) ?? null), bos };
}
