// The browser half of the benchmarks: Hearth (through its public API) and @wllama/wllama 3.8.1 on the same model
// Blob, timed the same way, from the caller's side: prefill = prompt tokens / time to the first generated token;
// decode = (generated tokens - 1) / time from the first to the last.
import { Wllama } from '@wllama/wllama/esm/index.js';
import wllamaWasm from '@wllama/wllama/esm/wasm/wllama.wasm?url';
import {
  type BackendName,
  createEngine,
  type CacheOptions,
  type CacheStats,
  type ChatMessage,
  type HearthEngine,
  type Progress,
  type SimdChoice,
  type SpeculativeOptions,
} from '../src/index.ts';
import type { GpuTrace } from '../test/webgpu/gpu-trace.ts';
import { NO_CACHE, type RunResult, timedChat } from './timed-chat.ts';

let model: Blob | null = null;
let hearth: HearthEngine | null = null;
/** The engines loaded by loadHearth, one per SIMD choice (the quants benchmark runs relaxed and plain side by side). */
let hearths: Partial<Record<SimdChoice, HearthEngine>> = {};
/** The engines loaded by loadBackend, one per backend. */
let backends: Partial<Record<BackendName, HearthEngine>> = {};
let wllama: Wllama | null = null;

async function modelBlob(url: string): Promise<Blob> {
  model ??= await (await fetch(url)).blob();
  return model;
}

const bench = {
  // null stands for a default too: puppeteer (bench/scenarios/profile.ts) passes undefined arguments as null.
  async loadHearth(
    url: string,
    threads: number,
    nCtx: number,
    cache: CacheOptions | null = NO_CACHE,
    nParallel?: number | null,
    simd: SimdChoice = 'auto',
    assetsUrl?: string | null,
    projector?: string | null,
    draft?: string | null,
  ) {
    hearths[simd]?.terminate();
    hearth = hearths[simd] = await createEngine({
      threads,
      cache: cache ?? NO_CACHE,
      simd,
      assetsUrl: assetsUrl ?? undefined,
    });
    await hearth.load(await modelBlob(url), {
      nCtx,
      nParallel: nParallel ?? undefined,
      projector: projector ?? undefined,
      draft: draft ? await (await fetch(draft)).blob() : undefined,
    });
    return hearth.info();
  },

  /** Makes the engine loaded with `simd` the one the other calls use. */
  selectHearth(simd: SimdChoice) {
    hearth = hearths[simd] ?? null;
  },

  /**
   * The model in an engine of `backend` (the webgpu benchmark: Hearth's GPU engine, its CPU engine, wllama's
   * WebGPU, each timed through the same chat API by runHearth once picked with selectBackend).
   */
  async loadBackend(url: string, backend: BackendName, threads: number, nCtx: number) {
    backends[backend]?.terminate();
    const engine = (backends[backend] = await createEngine({ backend, threads, cache: NO_CACHE }));
    await engine.load(await modelBlob(url), { nCtx });
    return engine.info();
  },

  /**
   * The next engine started runs its worker traced (bench/gpu-trace-worker.ts loaded first): the page's Worker is
   * swapped, for that one worker, for one that starts the engine's script from a small script that loads the tracer,
   * then it. One worker only: every traced worker answers takeGpuTrace, and the first answer is taken.
   */
  traceGpu() {
    const Real = globalThis.Worker;
    globalThis.Worker = class extends Real {
      constructor(url: string | URL, options?: WorkerOptions) {
        const href = new URL(String(url), location.href).href;
        if (!href.endsWith('/engine.worker.js')) {
          super(url, options);
          return;
        }
        globalThis.Worker = Real;
        const load = [`${location.origin}/bench/gpu-trace-worker.js`, href];
        const script = load.map((u) => `importScripts(${JSON.stringify(u)});`).join('\n');
        super(URL.createObjectURL(new Blob([script], { type: 'text/javascript' })), options);
      }
    };
  },

  /** What the traced engine workers counted since the last take (test/webgpu/gpu-trace.ts's takeTrace). */
  takeGpuTrace(): Promise<GpuTrace> {
    const channel = new BroadcastChannel('hearth-gpu-trace');
    return new Promise((resolve) => {
      channel.onmessage = (e: MessageEvent<GpuTrace>) => {
        channel.close();
        resolve(e.data);
      };
      channel.postMessage('take');
    });
  },

  selectBackend(backend: BackendName) {
    hearth = backends[backend] ?? null;
  },

  /** `speculative`: the request's (absent: the engine's default; null: none). */
  runHearth(
    messages: ChatMessage[],
    maxTokens: number,
    conversationId?: string | null,
    speculative?: SpeculativeOptions | null,
  ): Promise<RunResult> {
    const extra = speculative === undefined ? {} : { speculative };
    return timedChat(hearth!, messages, maxTokens, conversationId ?? undefined, undefined, extra);
  },

  /**
   * Starts one streaming request per message list at the same moment and records when each content chunk arrived.
   * `tokens` is the request's completion_tokens (a chunk can carry more than one token's bytes).
   */
  async runHearthConcurrent(
    requests: ChatMessage[][],
    maxTokens: number,
  ): Promise<Array<{ times: number[]; tokens: number }>> {
    return Promise.all(
      requests.map(async (messages) => {
        const times: number[] = [];
        let tokens = 0;
        const stream = await hearth!.chat.completions.create({
          messages,
          max_tokens: maxTokens,
          temperature: 0,
          stream: true,
          stream_options: { include_usage: true },
        });
        for await (const c of stream) {
          if (c.choices[0]?.delta.content) times.push(performance.now());
          if (c.usage) tokens = c.usage.completion_tokens;
        }
        return { times, tokens };
      }),
    );
  },

  /** Waits for Hearth's background saves; returns how long that took and the cache's figures afterwards. */
  async flushHearth(): Promise<{ ms: number; stats: CacheStats }> {
    const t0 = performance.now();
    await hearth!.cache.flush();
    return { ms: performance.now() - t0, stats: await hearth!.cache.stats() };
  },

  async hearthStats(): Promise<CacheStats> {
    return hearth!.cache.stats();
  },

  async loadWllama(url: string, threads: number, nCtx: number) {
    await wllama?.exit();
    wllama = new Wllama({ default: wllamaWasm }, { suppressNativeLog: true });
    wllama.setCompat(null); // never fetch its compat build from a CDN
    try {
      await wllama.loadModel([await modelBlob(url)], {
        n_threads: threads,
        n_ctx: nCtx,
        n_batch: 512,
        n_gpu_layers: 0,
      });
    } catch (err) {
      await wllama.exit().catch(() => {});
      wllama = null;
      throw err;
    }
    return { version: Wllama.getLibllamaVersion(), threads };
  },

  async runWllama(prompt: string, maxTokens: number): Promise<RunResult> {
    const t0 = performance.now();
    let tFirst = 0;
    let tLast = 0;
    let usage = { prompt_tokens: 0, completion_tokens: 0 };
    // cache_prompt false: every run prefills the whole prompt, as Hearth's does.
    const stream = (await wllama!.createCompletion({
      prompt,
      max_tokens: maxTokens,
      temperature: 0,
      stream: true,
      cache_prompt: false,
    } as never)) as unknown as AsyncIterable<{ choices: Array<{ text: string }>; usage?: typeof usage | null }>;
    for await (const c of stream) {
      if (c.choices[0]?.text && !tFirst) tFirst = performance.now();
      if (c.usage) usage = c.usage;
      tLast = performance.now();
    }
    return {
      promptTokens: usage.prompt_tokens,
      genTokens: usage.completion_tokens,
      ttftMs: tFirst - t0,
      decodeMs: tLast - tFirst,
    };
  },

  /**
   * A visit, timed from the page's navigation start (performance.now()): the engine starts, loads `source` (from the
   * network or the model store) with `promptState` (a URL) if given, and answers `messages` in the conversation
   * `conversationId`. Each progress phase's first and last moment, the first token, and the reply's figures; the
   * reply's state is saved before returning.
   */
  async visit(
    source: string | { hf: { repo: string; file: string } },
    hfEndpoint: string,
    threads: number,
    nCtx: number,
    messages: ChatMessage[],
    maxTokens: number,
    conversationId: string,
    promptState?: string,
  ) {
    const phases: Record<string, { start: number; end: number; total: number }> = {};
    const onProgress = (p: Progress) => {
      const now = performance.now();
      // The prompt state file's download and check apart from the model's ('prompt-state-download').
      const ph = (phases[p.file ? `${p.file}-${p.phase}` : p.phase] ??= { start: now, end: now, total: p.total });
      ph.end = now;
      ph.total = p.total;
    };
    const scriptMs = performance.now();
    hearth?.terminate();
    hearth = await createEngine({ threads, hfEndpoint, cache: { persistent: true, budgetBytes: 2 ** 30 } });
    const engineMs = performance.now();
    await hearth.load(source, { nCtx, onProgress, ...(promptState ? { promptState } : {}) });
    const loadedMs = performance.now();
    const reply = await timedChat(hearth, messages, maxTokens, conversationId, onProgress);
    await hearth.cache.flush();
    return {
      scriptMs,
      engineMs,
      loadedMs,
      firstMs: reply.firstAt!,
      phases,
      text: reply.text ?? '',
      usage: reply.usage!,
      timings: reply.timings!,
      info: await hearth.info(),
    };
  },

  /** The browser's own image decoder on a PNG (base64): createImageBitmap, then its RGBA pixels off an OffscreenCanvas.
   */
  async decodeImage(png: string): Promise<number> {
    const blob = new Blob([Uint8Array.from(atob(png), (c) => c.charCodeAt(0))], { type: 'image/png' });
    const t0 = performance.now();
    const bitmap = await createImageBitmap(blob);
    const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
    const ctx = canvas.getContext('2d')!;
    ctx.drawImage(bitmap, 0, 0);
    ctx.getImageData(0, 0, bitmap.width, bitmap.height);
    bitmap.close();
    return performance.now() - t0;
  },

  async unload() {
    hearth?.terminate();
    for (const h of [...Object.values(hearths), ...Object.values(backends)]) h.terminate();
    hearth = null;
    hearths = {};
    backends = {};
    await wllama?.exit();
    wllama = null;
  },
};

(window as unknown as { bench: typeof bench; benchReady: boolean }).bench = bench;
(window as unknown as { benchReady: boolean }).benchReady = true;
export type Bench = typeof bench;
