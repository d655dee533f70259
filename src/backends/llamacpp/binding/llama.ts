// Typed binding over wasm/hearth.cpp: the module (heap, calls guarded against traps, strings in and out, the
// quantizer). Every pointer it allocates is freed on every path (try/finally, or when a GPU call's promise settles);
// the objects that own native memory (model.ts, context.ts, sampler.ts) free it in free(), which is safe to call twice.
import { EngineError, terminatedError } from '../../../errors.ts';
import { LogTail } from './log.ts';
import type { HearthModule } from './module.ts';

/** llama_ftype values of the quantizations Llama.quantize makes (the names are llama-quantize's). */
const QUANT_FTYPES = {
  q4_0: 2,
  q5_0: 8,
  q5_1: 9,
  q8_0: 7,
  q4_k_m: 15,
  q5_k_m: 17,
  q6_k: 18,
  iq4_nl: 25,
  iq3_s: 26,
  iq4_xs: 30,
} as const;
export type QuantType = keyof typeof QUANT_FTYPES;

/** The adapter as its info names it ('nvidia hopper NVIDIA H100 80GB HBM3', 'mesa llvmpipe (LLVM 19.1.7, 256 bits)'). */
function adapterName(mod: HearthModule): string {
  const i = mod.hearthAdapter?.info ?? {};
  return [i.vendor, i.architecture, i.device, i.description].filter(Boolean).join(' ');
}

export class Llama {
  readonly mod: HearthModule;
  readonly log = new LogTail();
  /** Set when a call trapped (see guard): nothing may call into this module again. */
  crashed = false;
  /** Set by end(): the module's threads are gone; a call into it answers 'terminated'. */
  private ended = false;
  /** Why it trapped, in a line: what the GPU reported, else llama.cpp's last error, else the trap. */
  crashReason: string | null = null;
  /** The GPU llama.cpp runs layers on (the WebGPU build, where the page has a usable adapter), else null. */
  gpu: string | null = null;
  /** The GPU's shaders compute in f16 (the adapter's shader-f16); else in f32, with f16 data packed in 32-bit words
   * (wasm/patches/0028–0030). */
  gpuShaderF16 = false;
  /** The WebGPU build: the adapter is a software one (the browser calls it a fallback: lavapipe, SwiftShader). */
  gpuSoftware = false;
  /** What went wrong on the GPU first (its device lost, a buffer it could not allocate): why a trap happened. */
  gpuFault: { kind: 'lost' | 'allocation'; message: string } | null = null;
  private views: { buffer: ArrayBufferLike; u8: Uint8Array; i32: Int32Array; f32: Float32Array } | null = null;

  /** The binding over a fresh module: llama.cpp's backends started (in the WebGPU build, the adapter asked for).
   * `shaderF16` false: the WebGPU build's shaders compute in f32 even where the adapter has shader-f16; `gpuReplay`
   * false: it encodes every graph afresh (wasm/patches/0035); `subgroupMatrix` false: its matrix products take the
   * register-tiled shaders even where the adapter has subgroup matrices (wasm/patches/0036). */
  static async create(
    mod: HearthModule,
    opts: { shaderF16?: boolean; gpuReplay?: boolean; subgroupMatrix?: boolean } = {},
  ): Promise<Llama> {
    const llama = new Llama(mod);
    mod.hearthShaderF16 = opts.shaderF16;
    mod.hearthGpuReplay = opts.gpuReplay;
    mod.hearthSubgroupMatrix = opts.subgroupMatrix;
    await llama.guard(() => mod._hearth_init());
    if (mod._hearth_gpu_devices() > 0) {
      llama.gpu = adapterName(mod) || mod.UTF8ToString(mod._hearth_gpu_name());
      llama.gpuShaderF16 = opts.shaderF16 !== false && mod.hearthAdapter?.features?.has('shader-f16') === true;
      const a = mod.hearthAdapter;
      llama.gpuSoftware = a?.info?.isFallbackAdapter === true || a?.isFallbackAdapter === true;
    }
    return llama;
  }

  private constructor(mod: HearthModule) {
    this.mod = mod;
    mod.hearthLog = (level, text) => this.log.push(level, text);
    mod.hearthGpuEvent = (kind, message) => {
      this.log.push(3, `webgpu: ${kind}: ${message}\n`);
      if (kind !== 'error') this.gpuFault ??= { kind, message };
    };
    for (const text of mod.hearthStderr?.splice(0) ?? []) this.log.push(3, `${text}\n`);
  }

  /** Typed views on the wasm heap, rebuilt when it has grown (in the pthreads build another thread may grow it). */
  heap() {
    const buffer = this.mod.wasmMemory?.buffer ?? this.mod.HEAPU8.buffer;
    if (!this.views || this.views.buffer !== buffer) {
      this.views = { buffer, u8: new Uint8Array(buffer), i32: new Int32Array(buffer), f32: new Float32Array(buffer) };
    }
    return this.views;
  }

  /**
   * Runs a call into wasm; when it returns a promise (a call that waits for the GPU), its outcome. A trap (out of
   * memory, a llama.cpp abort) leaves the module unusable: it is marked crashed, so the engine creates a fresh one for
   * the next load, and reported as a typed error.
   */
  guard<T>(fn: () => T): T {
    // A threaded module without its threads would wait for them for ever.
    if (this.ended) throw terminatedError();
    let result: T;
    try {
      result = fn();
    } catch (err) {
      throw this.fatal(err);
    }
    if (result instanceof Promise) {
      return result.catch((err: unknown) => {
        throw this.fatal(err);
      }) as T;
    }
    return result;
  }

  /**
   * Ends the module for good: its pthread workers, which share its heap and would keep it alive after the module is
   * dropped (a trapped module replaced by a fresh one; an engine terminated), are ended; the heap goes with the last
   * reference to the module. Never called with a call into the module on the stack.
   */
  end(): void {
    this.ended = true;
    this.crashed = true;
    this.mod.hearthEndThreads?.();
  }

  /** The typed error for a trap (the module is then marked crashed); any other error as it is. */
  private fatal(err: unknown): unknown {
    const name = (err as Error)?.name;
    // SuspendError: an export that is not JSPI-wrapped reached a GPU wait (a build mistake), after which the
    // module's stack is in no known state.
    if (!(err instanceof WebAssembly.RuntimeError) && name !== 'RuntimeError' && name !== 'SuspendError') return err;
    this.crashed = true;
    // Where it trapped, for a bug report: the call stack (wasm frames by function index) and llama.cpp's last lines.
    const stack = String((err as Error).stack ?? '')
      .split('\n')
      .slice(0, 12)
      .join('\n');
    const details = { stack, log: this.log.since(Math.max(0, this.log.mark() - 20)) };
    // The last error or warning llama.cpp logged before emscripten's own "Aborted()".
    const why = this.log
      .since(Math.max(0, this.log.mark() - 20), true)
      .filter((l) => !/Aborted\(\)/.test(l))
      .at(-1);
    this.crashReason = this.gpuFault?.message ?? why?.replace(/^(error|warning): /, '') ?? (err as Error).message;
    // ggml aborts on any GPU failure; what the GPU reported says which it was.
    if (this.gpuFault?.kind === 'lost') {
      return new EngineError(
        `the GPU was lost (${this.gpuFault.message}); the engine loads the model again for the next request, on ` +
          'the CPU if the GPU does not come back',
        'gpu_lost',
        { ...details, retryable: true },
      );
    }
    if (this.gpuFault?.kind === 'allocation') {
      return new EngineError(
        `${this.gpuFault.message}. Load the model with fewer layers on the GPU (gpuLayers), a smaller context ` +
          "(nCtx), or on the CPU (backend 'wasm')",
        'gpu_allocation_failed',
        details,
      );
    }
    return new EngineError(
      `llama.cpp stopped with a fatal error (${(err as Error).message}); the engine loads the model again for ` +
        'the next request',
      'wasm_crash',
      details,
    );
  }

  get llamaBuild(): string {
    return this.mod.UTF8ToString(this.mod._hearth_llama_build());
  }

  get wasmSimd(): boolean {
    return this.mod._hearth_has_wasm_simd() === 1;
  }

  /**
   * How a relaxed build runs its 8-bit dot products on this CPU (ggml-cpu's arch/wasm/relaxed.h): 'int16' where the
   * browser turns relaxed SIMD's dot product into x86's pmaddubsw sequence (products then add up in int16 before
   * widening), 'int32' where it is one instruction (ARM's sdot, x86's vpdpbusd); null in a plain build.
   */
  get simdDot(): 'int16' | 'int32' | null {
    const mode = this.mod._hearth_simd_dot16();
    return mode < 0 ? null : mode ? 'int16' : 'int32';
  }

  /** The WebGPU build: the device was asked for subgroup matrices (ggml-webgpu found an f16 configuration it can use,
   * wasm/patches/0036), so its matrix products and flash attention take the subgroup-matrix shaders. */
  get gpuSubgroupMatrix(): boolean {
    return this.mod.hearthDeviceFeatures?.includes('chromium-experimental-subgroup-matrix') === true;
  }

  /** The WebGPU build with its adapter: the largest tensor a shader binds (the adapter's maxStorageBufferBindingSize,
   * which llama.cpp's WebGPU backend asks the device for); null without a GPU. */
  get gpuBindingLimit(): number | null {
    return this.gpu ? (this.mod.hearthAdapter?.limits?.maxStorageBufferBindingSize ?? null) : null;
  }

  /** Bytes allocated in the wasm heap right now (dlmalloc's count). */
  get heapInUse(): number {
    return this.mod._hearth_heap_in_use();
  }

  /** The most bytes the heap has held from malloc (its high-water mark, which a wasm heap keeps: it never shrinks). */
  get heapPeak(): number {
    return this.mod._hearth_heap_peak();
  }

  malloc(size: number): number {
    const p = this.mod._malloc(Math.max(1, size));
    if (!p) throw new RangeError(`wasm heap exhausted allocating ${size} bytes`);
    return p;
  }

  free(ptr: number) {
    if (ptr) this.mod._free(ptr);
  }

  /** Runs fn with `bytes` copied into the heap, then frees them (once its promise settles, if it returns one). */
  withBytes<T>(bytes: Uint8Array, fn: (ptr: number, len: number) => T): T {
    const ptr = this.malloc(bytes.length + 1);
    return this.freeing(ptr, () => {
      const u8 = this.heap().u8;
      u8.set(bytes, ptr);
      u8[ptr + bytes.length] = 0;
      return fn(ptr, bytes.length);
    });
  }

  withCString<T>(s: string, fn: (ptr: number, len: number) => T): T {
    return this.withBytes(new TextEncoder().encode(s), fn);
  }

  /** Runs fn with a scratch buffer of `size` bytes, then frees it (as withBytes). */
  withBuffer<T>(size: number, fn: (ptr: number) => T): T {
    const ptr = this.malloc(size);
    return this.freeing(ptr, () => fn(ptr));
  }

  /** fn's result, with `ptr` freed after it: at once, or when its promise settles (the wasm still uses it till then). */
  private freeing<T>(ptr: number, fn: () => T): T {
    let result: T;
    try {
      result = fn();
    } catch (err) {
      this.free(ptr);
      throw err;
    }
    if (result instanceof Promise) return result.finally(() => this.free(ptr)) as T;
    this.free(ptr);
    return result;
  }

  /** Reads a string that a C function writes into a caller buffer and whose length it returns (snprintf style). */
  readString(write: (buf: number, len: number) => number, initial = 256): string {
    let size = initial;
    for (;;) {
      const got = this.withBuffer(size, (buf) => {
        const n = write(buf, size);
        return n < 0 ? null : n < size ? this.mod.UTF8ToString(buf, n) : -n;
      });
      if (typeof got === 'string') return got;
      if (got === null) return '';
      size = -got + 1;
    }
  }

  /**
   * Writes the model at `input` quantized to `type` at `output` (paths in the module's filesystem) with llama.cpp's
   * quantizer. Throws with llama.cpp's complaint when it fails.
   */
  quantize(input: string, output: string, type: QuantType): void {
    const mark = this.log.mark();
    const status = this.withCString(input, (i) =>
      this.withCString(output, (o) => this.mod._hearth_quantize(i, o, QUANT_FTYPES[type], 1)),
    );
    if (status !== 0) {
      throw new Error(`llama.cpp could not quantize ${input} to ${type}: ${this.log.since(mark).slice(-3).join(' ')}`);
    }
  }
}
