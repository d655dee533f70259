// The raw emscripten module built from wasm/hearth.cpp, and how each environment gets one.
// Builds: 'mt' (pthreads + SIMD, needs SharedArrayBuffer) and 'st' (SIMD only), each also with relaxed SIMD.
import type { BuildVariant } from '../../../types.ts';
import type { FileSystemHost } from '../../../core/models/file.ts';

type Ptr = number;

/**
 * Where `ptr` is in a view of 4-byte elements (Int32Array, Float32Array of the heap). A wasm32 export returns a
 * pointer past 2 GiB as a negative i32; the memory64 build's are Numbers up to 16 GiB, which a 32-bit `>>> 2` would
 * cut. (Emscripten makes both builds' pointers Numbers: wasm/build.mjs, signatureConversions.)
 */
export function index32(ptr: Ptr): number {
  return (ptr < 0 ? ptr + 2 ** 32 : ptr) / 4;
}
/**
 * What an export that may wait for the GPU returns: in the WebGPU build (JSPI, wasm/build.mjs's JSPI_EXPORTS) a
 * promise, in the CPU builds the value itself.
 */
type Waits<T> = T | Promise<T>;

/** The exports of wasm/hearth.cpp plus the emscripten runtime pieces the binding uses. */
export interface HearthModule extends FileSystemHost {
  HEAPU8: Uint8Array;
  wasmMemory?: WebAssembly.Memory;
  UTF8ToString(ptr: Ptr, maxBytes?: number): string;
  hearthLog?: (level: number, text: string) => void;
  hearthProgress?: (progress: number) => boolean;
  /** stderr written before hearthLog was set (stderrToLog). */
  hearthStderr?: string[];
  /** The WebGPU build: the adapter llama.cpp asked for (wasm/webgpu/library_webgpu.js), with its info. */
  hearthAdapter?: {
    info?: Partial<Record<'vendor' | 'architecture' | 'device' | 'description', string>> & {
      isFallbackAdapter?: boolean;
    };
    isFallbackAdapter?: boolean;
    features?: { has(name: string): boolean };
    limits?: { maxStorageBufferBindingSize?: number; maxBufferSize?: number };
  };
  /** The WebGPU build: the device lost, a GPU error, or a buffer it could not allocate, as they happen. */
  hearthGpuEvent?: (kind: 'lost' | 'error' | 'allocation', message: string) => void;
  /** false: the WebGPU build leaves the adapter's shader-f16 unused (library_webgpu.js). */
  hearthShaderF16?: boolean;
  /** false: the WebGPU build encodes every graph afresh instead of replaying a recorded one (wasm/patches/0035). */
  hearthGpuReplay?: boolean;
  /** false: the WebGPU build leaves the adapter's subgroup matrices unused (library_webgpu.js). */
  hearthSubgroupMatrix?: boolean;
  /** The WebGPU build: the features llama.cpp asked its device for (library_webgpu.js), once it has one. */
  hearthDeviceFeatures?: string[];
  /** Ends the module's pthread workers, which otherwise keep its heap alive (wasm/post.js); absent in older builds. */
  hearthEndThreads?: () => void;

  _malloc(size: number): Ptr;
  _free(ptr: Ptr): void;

  _hearth_init(): Waits<void>;
  _hearth_gpu_devices(): number;
  _hearth_gpu_name(): Ptr;
  _hearth_llama_build(): Ptr;
  _hearth_has_wasm_simd(): number;
  _hearth_simd_dot16(): number;
  _hearth_heap_in_use(): number;
  _hearth_heap_peak(): number;

  _hearth_model_load(path: Ptr, vocabOnly: number, repack: number, gpuLayers: number): Waits<Ptr>;
  _hearth_model_free(model: Ptr): void;
  _hearth_model_n_ctx_train(model: Ptr): number;
  _hearth_model_n_embd(model: Ptr): number;
  _hearth_model_n_layer(model: Ptr): number;
  _hearth_model_n_head(model: Ptr): number;
  _hearth_model_n_head_kv(model: Ptr): number;
  _hearth_model_memory(model: Ptr): number;
  _hearth_quantize(input: Ptr, output: Ptr, ftype: number, nthread: number): number;
  _hearth_model_n_swa(model: Ptr): number;
  _hearth_model_n_params(model: Ptr): number;
  _hearth_model_size(model: Ptr): number;
  _hearth_model_desc(model: Ptr, buf: Ptr, len: number): number;
  _hearth_model_chat_template(model: Ptr): Ptr;
  _hearth_model_named_template(model: Ptr, name: Ptr): Ptr;
  _hearth_model_meta_count(model: Ptr): number;
  _hearth_model_meta_key(model: Ptr, i: number, buf: Ptr, len: number): number;
  _hearth_model_meta_val(model: Ptr, i: number, buf: Ptr, len: number): number;

  _hearth_vocab_n_tokens(model: Ptr): number;
  _hearth_vocab_bos(model: Ptr): number;
  _hearth_vocab_eos(model: Ptr): number;
  _hearth_vocab_add_bos(model: Ptr): number;
  _hearth_vocab_first_difference(a: Ptr, b: Ptr, n: number): number;
  _hearth_vocab_sep(model: Ptr): number;
  _hearth_vocab_eog_tokens(model: Ptr, out: Ptr, max: number): number;
  _hearth_tokenize(
    model: Ptr,
    text: Ptr,
    len: number,
    out: Ptr,
    max: number,
    addSpecial: number,
    parseSpecial: number,
  ): number;
  _hearth_token_to_piece(model: Ptr, token: number, buf: Ptr, len: number, special: number): number;

  _hearth_context_new(
    model: Ptr,
    nCtx: number,
    nBatch: number,
    nUbatch: number,
    nSeqMax: number,
    nThreads: number,
    typeK: number,
    typeV: number,
    flashAttn: number,
    swaFull: number,
  ): Waits<Ptr>;
  _hearth_context_free(ctx: Ptr): void;
  _hearth_context_n_ctx(ctx: Ptr): number;
  _hearth_decode(ctx: Ptr, tokens: Ptr, pos: Ptr, seq: Ptr, logits: Ptr, n: number): Waits<number>;
  _hearth_logits(ctx: Ptr, i: number): Ptr;

  _hearth_memory_clear(ctx: Ptr): Waits<void>;
  _hearth_seq_rm(ctx: Ptr, seq: number, p0: number, p1: number): number;
  _hearth_seq_cp(ctx: Ptr, src: number, dst: number, p0: number, p1: number): void;
  _hearth_seq_keep(ctx: Ptr, seq: number): void;
  _hearth_seq_add(ctx: Ptr, seq: number, p0: number, p1: number, delta: number): void;
  _hearth_seq_pos_min(ctx: Ptr, seq: number): number;
  _hearth_seq_pos_max(ctx: Ptr, seq: number): number;
  _hearth_memory_can_shift(ctx: Ptr): number;

  _hearth_state_seq_size(ctx: Ptr, seq: number, flags: number): number;
  _hearth_state_seq_get(ctx: Ptr, dst: Ptr, size: number, seq: number, flags: number): Waits<number>;
  _hearth_state_seq_set(ctx: Ptr, src: Ptr, size: number, seq: number, flags: number): Waits<number>;

  _hearth_sampler_new(
    model: Ptr,
    temp: number,
    topK: number,
    topP: number,
    minP: number,
    lastN: number,
    repeat: number,
    freq: number,
    presence: number,
    seed: number,
    grammar: Ptr,
  ): Ptr;
  _hearth_sampler_sample(sampler: Ptr, ctx: Ptr, i: number): number;
  _hearth_sampler_accept(sampler: Ptr, token: number): void;
  _hearth_sampler_grammar_check(sampler: Ptr, tokens: Ptr, n: number, out: Ptr, accept: number): number;
  _hearth_sampler_free(sampler: Ptr): void;
  _hearth_logprobs(ctx: Ptr, i: number, token: number, nTop: number, topIds: Ptr, topLogprobs: Ptr): number;
  _hearth_top_token(ctx: Ptr, i: number, k: number, p: Ptr): number;

  _hearth_set_embeddings(ctx: Ptr, on: number): void;
  _hearth_pooling_type(ctx: Ptr): number;
  _hearth_embeddings_seq(ctx: Ptr, seq: number): Ptr;
  _hearth_model_n_cls_out(model: Ptr): number;

  _hearth_mtmd_init(model: Ptr, path: Ptr, threads: number, marker: Ptr, useGpu: number): Waits<Ptr>;
  _hearth_mtmd_free(mtmd: Ptr): void;
  _hearth_mtmd_caps(mtmd: Ptr): number;
  _hearth_mtmd_marker(mtmd: Ptr): Ptr;
  _hearth_bitmap_from_file(mtmd: Ptr, buf: Ptr, len: number): Ptr;
  _hearth_bitmap_info(bitmap: Ptr, out: Ptr): void;
  _hearth_bitmap_set_id(bitmap: Ptr, id: Ptr): void;
  _hearth_bitmap_free(bitmap: Ptr): void;
  _hearth_mtmd_tokenize(
    mtmd: Ptr,
    text: Ptr,
    len: number,
    addSpecial: number,
    bitmaps: Ptr,
    n: number,
    status: Ptr,
  ): Ptr;
  _hearth_chunks_size(chunks: Ptr): number;
  _hearth_chunks_free(chunks: Ptr): void;
  _hearth_chunk_copy(chunks: Ptr, i: number): Ptr;
  _hearth_chunk_free(chunk: Ptr): void;
  _hearth_chunk_type(chunk: Ptr): number;
  _hearth_chunk_n_tokens(chunk: Ptr): number;
  _hearth_chunk_n_pos(chunk: Ptr): number;
  _hearth_chunk_id(chunk: Ptr): Ptr;
  _hearth_chunk_text(chunk: Ptr): Ptr;
  _hearth_media_encode(ctx: Ptr, mtmd: Ptr, chunk: Ptr): Waits<number>;
  _hearth_media_embd(mtmd: Ptr): Ptr;
  _hearth_model_n_embd_inp(model: Ptr): number;
  _hearth_media_decode(ctx: Ptr, mtmd: Ptr, chunk: Ptr, embd: Ptr, nPast: number, seq: number): Waits<number>;
}

/** What the emscripten factory accepts (besides our own hooks). */
export interface ModuleOverrides {
  locateFile?: (file: string) => string;
  wasmBinary?: Uint8Array;
  mainScriptUrlOrBlob?: string;
  /** pthread workers created up front: threads - 1 (see wasm/build.mjs). */
  hearthPoolSize?: number;
  /** Called with the count of pending run dependencies; the first call comes once the pthread workers exist. */
  monitorRunDependencies?: (pending: number) => void;
  print?: (text: string) => void;
  printErr?: (text: string) => void;
}

export type ModuleFactory = (overrides: ModuleOverrides) => Promise<HearthModule>;

/**
 * Overrides whose stderr goes into the module's log (binding/log.ts) as warnings, so a failure can say why: ggml's
 * WebGPU backend and emscripten write there, not through llama.cpp's logger. The module is this same object
 * (emscripten's MODULARIZE), so the log hook Llama sets on it later is the one called. `echo`: also shown there.
 */
export function stderrToLog(
  o: ModuleOverrides & Pick<HearthModule, 'hearthLog' | 'hearthStderr'>,
  echo?: (text: string) => void,
): ModuleOverrides {
  o.printErr = (text) => {
    echo?.(text);
    // Before the log is hooked up (while the module instantiates: static constructors), kept for it.
    if (o.hearthLog) o.hearthLog(3, `${text}\n`);
    else (o.hearthStderr ??= []).push(text);
  };
  return o;
}

/** Creates a fresh module instance; the engine calls it again after a fatal wasm error. */
export interface ModuleLoader {
  variant: BuildVariant;
  /** Why this build was picked (engine.info().buildReason). */
  reason: string;
  threads: number;
  load(): Promise<HearthModule>;
}
