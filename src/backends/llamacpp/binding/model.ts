// A loaded llama.cpp model: vocabulary, tokenizer, metadata, chat template (the native llama_model).
import type { ModelMemory } from '../../../types.ts';
import type { Llama } from './llama.ts';
import { index32 } from './module.ts';

export class LlamaModel {
  readonly nVocab: number;
  private ptrValue: number;
  private eog: Set<number> | null = null;
  /** Layers llama.cpp put on the GPU, of how many (its load log says): null when none went there. */
  offloaded: { layers: number; of: number } | null = null;

  /**
   * The model at `path` in the module's file system; null (llama.cpp's complaint kept in llama.log) when it is not a
   * model llama.cpp can load. `repack: false` keeps weights in their file layout instead of ggml's interleaved one
   * (for tests). `gpuLayers`: how many layers go to the GPU, where the build has one (llama.cpp streams their weights
   * from the file into GPU buffers; the rest stays in the heap).
   */
  static async load(
    llama: Llama,
    path: string,
    opts: { vocabOnly?: boolean; repack?: boolean; gpuLayers?: number } = {},
  ): Promise<LlamaModel | null> {
    const ptr = await llama.withCString(path, (p) =>
      llama.mod._hearth_model_load(p, opts.vocabOnly ? 1 : 0, opts.repack === false ? 0 : 1, opts.gpuLayers ?? 0),
    );
    return ptr ? new LlamaModel(llama, ptr) : null;
  }

  private constructor(
    readonly llama: Llama,
    ptr: number,
  ) {
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
  /** The first of the tokens both vocabularies have whose text or kind differs in `other`'s; -1 when none does. */
  vocabDifference(other: LlamaModel): number {
    const n = Math.min(this.nVocab, other.nVocab);
    const t = this.llama.mod._hearth_vocab_first_difference(this.ptr, other.ptr, n);
    return t < n ? t : -1;
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
        return Array.from(this.llama.heap().i32.subarray(index32(out), index32(out) + n));
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
          return this.llama.heap().i32.slice(index32(out), index32(out) + n);
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
