// A llama.cpp context over a model (the native llama_context): decoding, logits, KV sequences and their state.
import type { GgmlType } from '../../../types.ts';
import type { LlamaModel } from './model.ts';
import { index32 } from './module.ts';

const GGML_TYPES: Record<GgmlType, number> = { f32: 0, f16: 1, q4_0: 2, q8_0: 8 };

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

  /** A context over `model`; throws when llama.cpp cannot make one (its reason in llama.log). */
  static async create(model: LlamaModel, params: ContextParams): Promise<LlamaContext> {
    const m = model.llama.mod;
    const ptr = await m._hearth_context_new(
      model.ptr,
      params.nCtx,
      params.nBatch,
      params.nUbatch,
      params.nSeqMax,
      params.threads,
      GGML_TYPES[params.typeK],
      GGML_TYPES[params.typeV],
      params.flashAttn,
      params.swaFull === false ? 0 : 1,
    );
    if (!ptr) throw new Error('llama.cpp could not create the context');
    try {
      return new LlamaContext(model, params, ptr, model.llama.malloc(params.nBatch * 13));
    } catch (err) {
      m._hearth_context_free(ptr);
      throw err;
    }
  }

  private constructor(
    readonly model: LlamaModel,
    params: ContextParams,
    ptr: number,
    io: number,
  ) {
    this.ptrValue = ptr;
    this.params = params;
    this.nCtx = model.llama.mod._hearth_context_n_ctx(ptr);
    this.io = io;
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
  decode(
    tokens: ArrayLike<number>,
    pos: ArrayLike<number>,
    seq: ArrayLike<number>,
    outputs: ArrayLike<boolean>,
  ): Promise<number> {
    const n = tokens.length;
    if (n === 0) return Promise.resolve(0);
    if (n > this.params.nBatch) throw new RangeError(`batch of ${n} tokens exceeds n_batch ${this.params.nBatch}`);
    const { i32, u8 } = this.model.llama.heap();
    // Indexes by index32 and addresses by * (not >> and <<): past 2 GiB of heap a 32-bit shift turns them negative (a
    // model over 2 GB on the CPU engine puts its context's buffers there), past 4 GiB (memory64) it cuts them.
    const t = index32(this.io);
    const p = t + this.params.nBatch;
    const s = p + this.params.nBatch;
    const o = (s + this.params.nBatch) * 4;
    for (let i = 0; i < n; i++) {
      i32[t + i] = tokens[i]!;
      i32[p + i] = pos[i]!;
      i32[s + i] = seq[i]!;
      u8[o + i] = outputs[i] ? 1 : 0;
    }
    return Promise.resolve(this.mod._hearth_decode(this.ptr, t * 4, p * 4, s * 4, o, n));
  }

  /** A copy of the logits at batch index i of the last decode. */
  logits(i: number): Float32Array {
    const ptr = this.mod._hearth_logits(this.ptr, i);
    if (!ptr) throw new RangeError(`no logits at batch index ${i}`);
    return this.model.llama.heap().f32.slice(index32(ptr), index32(ptr) + this.model.nVocab);
  }

  async clear(): Promise<void> {
    await this.mod._hearth_memory_clear(this.ptr);
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
    return this.model.llama.heap().f32.slice(index32(ptr), index32(ptr) + n);
  }
  /** Drops positions [p0, p1) of seq (p1 < 0: to the end). False when llama.cpp cannot (partial removal of a recurrent
   * state). */
  seqRm(seq: number, p0 = 0, p1 = -1): boolean {
    return this.mod._hearth_seq_rm(this.ptr, seq, p0, p1) === 1;
  }
  seqCp(src: number, dst: number, p0 = 0, p1 = -1) {
    this.mod._hearth_seq_cp(this.ptr, src, dst, p0, p1);
  }
  seqKeep(seq: number) {
    this.mod._hearth_seq_keep(this.ptr, seq);
  }
  /** Whether seqAdd can move cells (a context shift): not in M-RoPE models (llama.cpp aborts there). */
  get canShift(): boolean {
    return this.mod._hearth_memory_can_shift(this.ptr) === 1;
  }
  seqAdd(seq: number, p0: number, p1: number, delta: number) {
    if (!this.canShift) throw new Error('llama.cpp cannot move the cells of this model (M-RoPE)');
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
  stateGet(seq: number, partial = false): Promise<Uint8Array> {
    const flags = partial ? STATE_PARTIAL_ONLY : 0;
    const size = this.stateSize(seq, partial);
    return this.model.llama.withBuffer(size, async (buf) => {
      const n = await this.mod._hearth_state_seq_get(this.ptr, buf, size, seq, flags);
      if (n !== size) throw new Error(`state export wrote ${n} of ${size} bytes`);
      return this.model.llama.heap().u8.slice(buf, buf + n);
    });
  }

  /** The bytes stateGet(seq, partial) would return. */
  stateSize(seq: number, partial = false): number {
    return this.mod._hearth_state_seq_size(this.ptr, seq, partial ? STATE_PARTIAL_ONLY : 0);
  }

  /** Loads a state from stateGet (with the same `partial`) into `seq`. False when it does not fit this context. */
  stateSet(data: Uint8Array, seq: number, partial = false): Promise<boolean> {
    const flags = partial ? STATE_PARTIAL_ONLY : 0;
    return this.model.llama.withBytes(
      data,
      async (ptr, len) => (await this.mod._hearth_state_seq_set(this.ptr, ptr, len, seq, flags)) === len,
    );
  }
}
