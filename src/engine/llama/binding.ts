// Typed binding over wasm/hearth.cpp. Every pointer it allocates is freed on every path (try/finally); the objects
// that own native memory (LlamaModel, LlamaContext, Sampler) free it in free(), which is safe to call twice.
import type { SamplerParams } from '../../api/request.ts';
import { EngineError } from '../../errors.ts';
import type { GgmlType, ModelMemory } from '../../types.ts';
import type { HearthModule } from './module.ts';

const GGML_TYPES: Record<GgmlType, number> = { f32: 0, f16: 1, q4_0: 2, q8_0: 8 };

/** llama.cpp's log lines, kept so a failed call can say why (see mark/since). */
export class LogTail {
  private entries: Array<{ n: number; line: string }> = [];
  private count = 0;
  private partial = '';
  private partialLevel = 0;

  push(level: number, text: string) {
    // llama.cpp logs in fragments; level 5 (GGML_LOG_LEVEL_CONT) continues the previous line at its level.
    if (!this.partial) this.partialLevel = level;
    this.partial += text;
    if (!this.partial.endsWith('\n')) return;
    const prefix = this.partialLevel === 4 ? 'error: ' : this.partialLevel === 3 ? 'warning: ' : '';
    for (const line of this.partial.split('\n')) {
      if (line.trim()) this.entries.push({ n: this.count++, line: prefix + line.trim() });
    }
    this.partial = '';
    if (this.entries.length > 300) this.entries.splice(0, this.entries.length - 300);
  }

  mark(): number {
    return this.count;
  }

  /** Lines logged since mark(); only errors and warnings when `problems`. */
  since(mark: number, problems = false): string[] {
    return this.entries
      .filter((e) => e.n >= mark && (!problems || /^(error|warning): /.test(e.line)))
      .map((e) => e.line);
  }
}

export class Llama {
  readonly mod: HearthModule;
  readonly log = new LogTail();
  /** Set when a call trapped (see guard): nothing may call into this module again. */
  crashed = false;
  private views: { buffer: ArrayBufferLike; u8: Uint8Array; i32: Int32Array; f32: Float32Array } | null = null;

  constructor(mod: HearthModule) {
    this.mod = mod;
    mod.hearthLog = (level, text) => this.log.push(level, text);
    mod._hearth_init();
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
   * Runs a call into wasm. A trap (out of memory, a llama.cpp abort) leaves the module unusable: it is marked
   * crashed, so the engine creates a fresh one for the next load, and reported as a typed error.
   */
  guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      if (err instanceof WebAssembly.RuntimeError || (err as Error)?.name === 'RuntimeError') {
        this.crashed = true;
        throw new EngineError(`llama.cpp stopped with a fatal error (${(err as Error).message}); load the model again.`, 'wasm_crash');
      }
      throw err;
    }
  }

  get llamaBuild(): string {
    return this.mod.UTF8ToString(this.mod._hearth_llama_build());
  }

  get wasmSimd(): boolean {
    return this.mod._hearth_has_wasm_simd() === 1;
  }

  /** Bytes allocated in the wasm heap right now (dlmalloc's count). */
  get heapInUse(): number {
    return this.mod._hearth_heap_in_use();
  }

  malloc(size: number): number {
    const p = this.mod._malloc(Math.max(1, size));
    if (!p) throw new RangeError(`wasm heap exhausted allocating ${size} bytes`);
    return p;
  }

  free(ptr: number) {
    if (ptr) this.mod._free(ptr);
  }

  /** Runs fn with `bytes` copied into the heap, then frees them. */
  withBytes<T>(bytes: Uint8Array, fn: (ptr: number, len: number) => T): T {
    const ptr = this.malloc(bytes.length + 1);
    try {
      const u8 = this.heap().u8;
      u8.set(bytes, ptr);
      u8[ptr + bytes.length] = 0;
      return fn(ptr, bytes.length);
    } finally {
      this.free(ptr);
    }
  }

  withCString<T>(s: string, fn: (ptr: number, len: number) => T): T {
    return this.withBytes(new TextEncoder().encode(s), fn);
  }

  /** Runs fn with a scratch buffer of `size` bytes, then frees it. */
  withBuffer<T>(size: number, fn: (ptr: number) => T): T {
    const ptr = this.malloc(size);
    try {
      return fn(ptr);
    } finally {
      this.free(ptr);
    }
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
    const status = this.withCString(input, (i) => this.withCString(output, (o) => this.mod._hearth_quantize(i, o, QUANT_FTYPES[type], 1)));
    if (status !== 0) throw new Error(`llama.cpp could not quantize ${input} to ${type}: ${this.log.since(mark).slice(-3).join(' ')}`);
  }

  /**
   * Returns null (and keeps llama.cpp's complaint in `log`) when the file is not a model llama.cpp can load.
   * `repack: false` keeps weights in their file layout instead of ggml's interleaved one (for tests).
   */
  loadModel(path: string, opts: { vocabOnly?: boolean; repack?: boolean } = {}): LlamaModel | null {
    const ptr = this.withCString(path, (p) => this.mod._hearth_model_load(p, opts.vocabOnly ? 1 : 0, opts.repack === false ? 0 : 1));
    return ptr ? new LlamaModel(this, ptr) : null;
  }
}

export class LlamaModel {
  readonly nVocab: number;
  private ptrValue: number;
  private eog: Set<number> | null = null;

  constructor(readonly llama: Llama, ptr: number) {
    this.ptrValue = ptr;
    this.nVocab = llama.mod._hearth_vocab_n_tokens(ptr);
  }

  get ptr(): number {
    if (!this.ptrValue) throw new Error('model was freed');
    return this.ptrValue;
  }

  free() {
    if (this.ptrValue) this.llama.mod._hearth_model_free(this.ptrValue);
    this.ptrValue = 0;
  }

  get bos(): number {
    return this.llama.mod._hearth_vocab_bos(this.ptr);
  }
  get eos(): number {
    return this.llama.mod._hearth_vocab_eos(this.ptr);
  }
  get addBos(): boolean {
    return this.llama.mod._hearth_vocab_add_bos(this.ptr) === 1;
  }
  /** The separator token (BERT's [SEP]), or -1. */
  get sep(): number {
    return this.llama.mod._hearth_vocab_sep(this.ptr);
  }
  /** Classifier outputs of a reranker (n_cls_out). */
  get nClsOut(): number {
    return this.llama.mod._hearth_model_n_cls_out(this.ptr);
  }

  /** Every end-of-generation token (eos, eot, <|im_end|>, …) as llama.cpp detected them. */
  get eogTokens(): Set<number> {
    if (!this.eog) {
      const m = this.llama.mod;
      const n = m._hearth_vocab_eog_tokens(this.ptr, 0, 0);
      const ids = this.llama.withBuffer(4 * Math.max(1, n), (out) => {
        m._hearth_vocab_eog_tokens(this.ptr, out, n);
        return Array.from(this.llama.heap().i32.subarray(out >> 2, (out >> 2) + n));
      });
      this.eog = new Set(ids);
    }
    return this.eog;
  }

  get chatTemplate(): string | null {
    const p = this.llama.mod._hearth_model_chat_template(this.ptr);
    return p ? this.llama.mod.UTF8ToString(p) : null;
  }

  /** A named template of the GGUF (tokenizer.chat_template.<name>, e.g. 'rerank'), or null. */
  namedTemplate(name: string): string | null {
    const p = this.llama.withCString(name, (n) => this.llama.mod._hearth_model_named_template(this.ptr, n));
    return p ? this.llama.mod.UTF8ToString(p) : null;
  }

  get description(): string {
    return this.llama.readString((buf, len) => this.llama.mod._hearth_model_desc(this.ptr, buf, len));
  }

  /** GGUF key-values as llama.cpp renders them (long arrays are summarised). */
  metadata(): Record<string, string> {
    const m = this.llama.mod;
    const out: Record<string, string> = {};
    const n = m._hearth_model_meta_count(this.ptr);
    for (let i = 0; i < n; i++) {
      const key = this.llama.readString((buf, len) => m._hearth_model_meta_key(this.ptr, i, buf, len));
      out[key] = this.llama.readString((buf, len) => m._hearth_model_meta_val(this.ptr, i, buf, len), 1024);
    }
    return out;
  }

  /** What the model keeps per sequence (llama_model_is_recurrent, _is_hybrid, _n_swa). */
  memory(): ModelMemory {
    const m = this.llama.mod;
    const kind = (['attention', 'recurrent', 'hybrid'] as const)[m._hearth_model_memory(this.ptr)]!;
    const swaWindow = m._hearth_model_n_swa(this.ptr);
    return { kind: kind === 'attention' && swaWindow > 0 ? 'swa' : kind, swaWindow };
  }

  shape() {
    const m = this.llama.mod;
    const p = this.ptr;
    return {
      nCtxTrain: m._hearth_model_n_ctx_train(p),
      nEmbd: m._hearth_model_n_embd(p),
      nLayer: m._hearth_model_n_layer(p),
      nHead: m._hearth_model_n_head(p),
      nHeadKv: m._hearth_model_n_head_kv(p),
      nParams: m._hearth_model_n_params(p),
      sizeBytes: m._hearth_model_size(p),
      nVocab: this.nVocab,
    };
  }

  /**
   * Text to token ids. addSpecial adds BOS/EOS as the vocabulary asks; parseSpecial turns control-token text such
   * as "<|im_start|>" into the control token (wanted for rendered templates, unwanted for user text).
   */
  tokenize(text: string, addSpecial: boolean, parseSpecial: boolean): Int32Array {
    const m = this.llama.mod;
    return this.llama.withCString(text, (textPtr, len) => {
      let max = len + 8;
      for (;;) {
        const result = this.llama.withBuffer(4 * max, (out) => {
          const n = m._hearth_tokenize(this.ptr, textPtr, len, out, max, addSpecial ? 1 : 0, parseSpecial ? 1 : 0);
          if (n < 0) return -n;
          return this.llama.heap().i32.slice(out >> 2, (out >> 2) + n);
        });
        if (typeof result !== 'number') return result;
        max = result;
      }
    });
  }

  /** The raw bytes of one token (may be part of a UTF-8 character). `special` renders control tokens as text. */
  tokenBytes(token: number, special: boolean): Uint8Array {
    const m = this.llama.mod;
    let size = 64;
    for (;;) {
      const result = this.llama.withBuffer(size, (buf) => {
        const n = m._hearth_token_to_piece(this.ptr, token, buf, size, special ? 1 : 0);
        return n < 0 ? -n : this.llama.heap().u8.slice(buf, buf + n);
      });
      if (typeof result !== 'number') return result;
      size = result;
    }
  }
}

/** llama_ftype values of the quantizations Llama.quantize makes (the names are llama-quantize's). */
const QUANT_FTYPES = { q4_0: 2, q8_0: 7, q4_k_m: 15, q5_k_m: 17, q6_k: 18, iq4_nl: 25, iq3_s: 26, iq4_xs: 30 } as const;
export type QuantType = keyof typeof QUANT_FTYPES;

const STATE_PARTIAL_ONLY = 1; // LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY

export interface ContextParams {
  nCtx: number;
  nBatch: number;
  nUbatch: number;
  nSeqMax: number;
  threads: number;
  typeK: GgmlType;
  typeV: GgmlType;
  /** -1 auto, 0 off, 1 on (llama_flash_attn_type). */
  flashAttn: -1 | 0 | 1;
  /** Sliding-window layers keep every token (llama.cpp's default) instead of only the window. */
  swaFull?: boolean;
}

export class LlamaContext {
  readonly params: ContextParams;
  readonly nCtx: number;
  private ptrValue: number;
  // Input arrays for decode, allocated once at n_batch: tokens, positions, sequence ids (int32) and output flags.
  private readonly io: number;

  constructor(readonly model: LlamaModel, params: ContextParams) {
    const m = model.llama.mod;
    const ptr = m._hearth_context_new(model.ptr, params.nCtx, params.nBatch, params.nUbatch, params.nSeqMax,
      params.threads, GGML_TYPES[params.typeK], GGML_TYPES[params.typeV], params.flashAttn, params.swaFull === false ? 0 : 1);
    if (!ptr) throw new Error('llama.cpp could not create the context');
    this.ptrValue = ptr;
    this.params = params;
    this.nCtx = m._hearth_context_n_ctx(ptr);
    try {
      this.io = model.llama.malloc(params.nBatch * 13);
    } catch (err) {
      m._hearth_context_free(ptr);
      throw err;
    }
  }

  get ptr(): number {
    if (!this.ptrValue) throw new Error('context was freed');
    return this.ptrValue;
  }

  private get mod() {
    return this.model.llama.mod;
  }

  free() {
    if (!this.ptrValue) return;
    this.model.llama.free(this.io);
    this.mod._hearth_context_free(this.ptrValue);
    this.ptrValue = 0;
  }

  /**
   * One llama_decode. Returns llama.cpp's status: 0 ok, 1 no room in the KV cache, 2 aborted, < 0 error.
   * `outputs[i]` asks for logits at batch index i (read them with logits(i)).
   */
  decode(tokens: ArrayLike<number>, pos: ArrayLike<number>, seq: ArrayLike<number>, outputs: ArrayLike<boolean>): number {
    const n = tokens.length;
    if (n === 0) return 0;
    if (n > this.params.nBatch) throw new RangeError(`batch of ${n} tokens exceeds n_batch ${this.params.nBatch}`);
    const { i32, u8 } = this.model.llama.heap();
    const t = this.io >> 2;
    const p = t + this.params.nBatch;
    const s = p + this.params.nBatch;
    const o = (s + this.params.nBatch) << 2;
    for (let i = 0; i < n; i++) {
      i32[t + i] = tokens[i]!;
      i32[p + i] = pos[i]!;
      i32[s + i] = seq[i]!;
      u8[o + i] = outputs[i] ? 1 : 0;
    }
    return this.mod._hearth_decode(this.ptr, t << 2, p << 2, s << 2, o, n);
  }

  /** A copy of the logits at batch index i of the last decode. */
  logits(i: number): Float32Array {
    const ptr = this.mod._hearth_logits(this.ptr, i);
    if (!ptr) throw new RangeError(`no logits at batch index ${i}`);
    return this.model.llama.heap().f32.slice(ptr >> 2, (ptr >> 2) + this.model.nVocab);
  }

  clear() {
    this.mod._hearth_memory_clear(this.ptr);
  }

  /** Embedding outputs (pooled per sequence) instead of logits for the next decodes. */
  setEmbeddings(on: boolean) {
    this.mod._hearth_set_embeddings(this.ptr, on ? 1 : 0);
  }

  /** llama_pooling_type: 0 none, 1 mean, 2 cls, 3 last, 4 rank; the model's own unless the context set one. */
  get poolingType(): number {
    return this.mod._hearth_pooling_type(this.ptr);
  }

  /** A copy of sequence `seq`'s pooled output after the last decode: n_embd floats, or n_cls_out scores (rank). */
  pooled(seq: number, n: number): Float32Array {
    const ptr = this.mod._hearth_embeddings_seq(this.ptr, seq);
    if (!ptr) throw new RangeError(`no pooled embedding for sequence ${seq}`);
    return this.model.llama.heap().f32.slice(ptr >> 2, (ptr >> 2) + n);
  }
  /** Drops positions [p0, p1) of seq (p1 < 0: to the end). False when llama.cpp cannot (partial removal of a recurrent state). */
  seqRm(seq: number, p0 = 0, p1 = -1): boolean {
    return this.mod._hearth_seq_rm(this.ptr, seq, p0, p1) === 1;
  }
  seqCp(src: number, dst: number, p0 = 0, p1 = -1) {
    this.mod._hearth_seq_cp(this.ptr, src, dst, p0, p1);
  }
  seqKeep(seq: number) {
    this.mod._hearth_seq_keep(this.ptr, seq);
  }
  seqAdd(seq: number, p0: number, p1: number, delta: number) {
    this.mod._hearth_seq_add(this.ptr, seq, p0, p1, delta);
  }
  /** -1 when the sequence is empty. */
  seqPosMin(seq: number): number {
    return this.mod._hearth_seq_pos_min(this.ptr, seq);
  }
  seqPosMax(seq: number): number {
    return this.mod._hearth_seq_pos_max(this.ptr, seq);
  }

  /**
   * The state of one sequence, as llama_state_seq_get_data writes it. `partial`: only the part that cannot be rolled
   * back (the recurrent state, or the SWA cells), for a checkpoint.
   */
  stateGet(seq: number, partial = false): Uint8Array {
    const flags = partial ? STATE_PARTIAL_ONLY : 0;
    const size = this.mod._hearth_state_seq_size(this.ptr, seq, flags);
    return this.model.llama.withBuffer(size, (buf) => {
      const n = this.mod._hearth_state_seq_get(this.ptr, buf, size, seq, flags);
      if (n !== size) throw new Error(`state export wrote ${n} of ${size} bytes`);
      return this.model.llama.heap().u8.slice(buf, buf + n);
    });
  }

  /** Loads a state from stateGet (with the same `partial`) into `seq`. False when it does not fit this context. */
  stateSet(data: Uint8Array, seq: number, partial = false): boolean {
    const flags = partial ? STATE_PARTIAL_ONLY : 0;
    return this.model.llama.withBytes(data, (ptr, len) => this.mod._hearth_state_seq_set(this.ptr, ptr, len, seq, flags) === len);
  }
}

/** Thrown when llama.cpp refuses a GBNF grammar; `detail` holds its parser's messages. */
export class GrammarError extends Error {
  constructor(readonly detail: string[]) {
    super(`llama.cpp could not parse the grammar${detail.length ? `: ${detail.join('; ')}` : ''}`);
  }
}

export class Sampler {
  private ptrValue: number;

  /** `grammar`: GBNF with a rule named root that every sampled token must follow (GrammarError when it does not parse). */
  constructor(readonly model: LlamaModel, p: SamplerParams, grammar: string | null = null) {
    const llama = model.llama;
    const mark = llama.log.mark();
    const create = (g: number) => llama.mod._hearth_sampler_new(model.ptr, p.temperature, p.topK, p.topP, p.minP,
      p.repeatLastN, p.repeatPenalty, p.frequencyPenalty, p.presencePenalty, p.seed >>> 0, g);
    this.ptrValue = grammar ? llama.withCString(grammar, create) : create(0);
    if (!this.ptrValue) {
      if (grammar) throw new GrammarError(llama.log.since(mark));
      throw new Error('llama.cpp could not create the sampler');
    }
  }

  /** Samples from the logits at batch index i of ctx's last decode, and records the token (penalties, grammar). */
  sample(ctx: LlamaContext, i: number): number {
    return this.model.llama.mod._hearth_sampler_sample(this.ptrValue, ctx.ptr, i);
  }

  /** Records a token (e.g. of the prompt) in the penalty history without sampling. */
  accept(token: number) {
    this.model.llama.mod._hearth_sampler_accept(this.ptrValue, token);
  }

  /** Which of `tokens` the grammar allows next, checked together; then moves the grammar past `accept`, if given. */
  grammarAllows(tokens: Int32Array, accept = -1): boolean[] {
    const llama = this.model.llama;
    return llama.withBuffer(5 * tokens.length, (buf) => {
      llama.heap().i32.set(tokens, buf >> 2);
      const out = buf + 4 * tokens.length;
      if (!llama.mod._hearth_sampler_grammar_check(this.ptrValue, buf, tokens.length, out, accept)) throw new Error('the sampler has no grammar');
      return [...llama.heap().u8.subarray(out, out + tokens.length)].map((v) => v === 1);
    });
  }

  free() {
    if (this.ptrValue) this.model.llama.mod._hearth_sampler_free(this.ptrValue);
    this.ptrValue = 0;
  }
}

export interface TokenLogprobs {
  logprob: number;
  /** The most likely tokens at that step, most likely first. */
  top: Array<{ token: number; logprob: number }>;
}

/** The log-probability of `token` at batch index i of ctx's last decode (from the raw logits), and the `nTop` likeliest. */
export function logprobs(ctx: LlamaContext, i: number, token: number, nTop: number): TokenLogprobs {
  const llama = ctx.model.llama;
  return llama.withBuffer(8 * Math.max(1, nTop), (buf) => {
    const ids = buf;
    const lps = buf + 4 * nTop;
    const logprob = llama.mod._hearth_logprobs(ctx.ptr, i, token, nTop, ids, lps);
    const { i32, f32 } = llama.heap();
    const top = [];
    for (let k = 0; k < nTop; k++) top.push({ token: i32[(ids >> 2) + k]!, logprob: f32[(lps >> 2) + k]! });
    return { logprob, top };
  });
}
