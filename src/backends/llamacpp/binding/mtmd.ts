// A model's projector (libmtmd: the image and audio encoders of an mmproj GGUF) and the prompts it splits into text
// and media chunks. A media chunk stands in the prompt's token list as placeholder tokens: negative ids derived from
// the hash of the media's bytes, one per position it fills. Everything that matches prompts by tokens (the cache, its
// saved records) then tells one image from another, and reuses an image's KV cells without encoding it again.
import type { RequestMedia } from '../../../contract.ts';
import type { LlamaContext } from './context.ts';
import type { Llama } from './llama.ts';
import type { LlamaModel } from './model.ts';
import { index32 } from './module.ts';

export type MediaKind = RequestMedia['kind'];

/** A media chunk of a prompt: where its placeholders sit in the token list and the native chunk that fills them. */
export interface MediaSpan {
  kind: MediaKind;
  start: number;
  end: number;
  /** mtmd_input_chunk (owned by the MediaPrompt). */
  chunk: number;
}

/** A prompt split by the projector: its tokens (placeholders where media go) and its media chunks. */
export interface MediaPrompt {
  tokens: Int32Array;
  spans: MediaSpan[];
  /** Frees the native chunks; safe to call twice. */
  free(): void;
}

/** Why a media prompt could not be made: the media's bytes do not decode, or the projector refused them. */
export class MediaDecodeError extends Error {
  constructor(
    message: string,
    readonly index: number,
  ) {
    super(message);
  }
}

const CHUNK_KIND: Record<number, MediaKind> = { 1: 'image', 2: 'audio' };

export class LlamaProjector {
  readonly image: boolean;
  readonly audio: boolean;
  /** Whether images take fewer positions than tokens (M-RoPE: Qwen2-VL, Qwen2.5-VL, Qwen3-VL; see the header). */
  readonly mrope: boolean;
  readonly marker: string;
  /** Where its encoder runs: on the GPU (the WebGPU build, with the model's layers there), else the CPU. */
  onGpu = false;
  private ptrValue: number;

  /**
   * The projector at `path` for `model`; null (llama.cpp's reason in llama.log) when it is not one for this model.
   * `identity` names the projector file: an image's placeholders differ between projectors, as its KV cells do.
   */
  static async load(
    llama: Llama,
    model: LlamaModel,
    path: string,
    threads: number,
    identity: string,
  ): Promise<LlamaProjector | null> {
    // A marker of this load's own: text a user writes can never hold it, so it never takes an image's place.
    const marker = `<__hearth_media_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}__>`;
    // The encoder goes where the model's layers are: on the GPU when any are there.
    const onGpu = (model.offloaded?.layers ?? 0) > 0 ? 1 : 0;
    const ptr = await llama.withCString(path, (p) =>
      llama.withCString(marker, (mk) => llama.mod._hearth_mtmd_init(model.ptr, p, threads, mk, onGpu)),
    );
    if (!ptr) return null;
    const projector = new LlamaProjector(llama, model, ptr, identity);
    // Asked to, clip.cpp takes the first GPU backend there is (clip_ctx): the one the model's layers run on.
    projector.onGpu = onGpu === 1;
    return projector;
  }

  private constructor(
    readonly llama: Llama,
    readonly model: LlamaModel,
    ptr: number,
    private readonly identity: string,
  ) {
    this.ptrValue = ptr;
    const caps = llama.mod._hearth_mtmd_caps(ptr);
    this.image = (caps & 1) !== 0;
    this.audio = (caps & 2) !== 0;
    this.mrope = (caps & 4) !== 0;
    this.marker = llama.mod.UTF8ToString(llama.mod._hearth_mtmd_marker(ptr));
  }

  get ptr(): number {
    if (!this.ptrValue) throw new Error('projector was freed');
    return this.ptrValue;
  }

  free() {
    if (this.ptrValue) this.llama.mod._hearth_mtmd_free(this.ptrValue);
    this.ptrValue = 0;
  }

  /**
   * Splits `text` (one marker per media input, in order) into text tokens and media chunks: each input decoded (stb_image
   * for images, miniaudio for audio) and preprocessed. Throws MediaDecodeError naming the input that failed.
   */
  prompt(text: string, addSpecial: boolean, media: RequestMedia[]): MediaPrompt {
    const { llama } = this;
    const m = llama.mod;
    const bitmaps: number[] = [];
    try {
      media.forEach((input, i) => {
        const b = llama.withBytes(input.bytes, (p, len) => m._hearth_bitmap_from_file(this.ptr, p, len));
        if (!b) {
          throw new MediaDecodeError(
            `${input.kind} ${i + 1} could not be decoded: ${lastError(llama) ?? 'not a format the decoder reads'}`,
            i,
          );
        }
        bitmaps.push(b);
        const isAudio = llama.withBuffer(12, (out) => {
          m._hearth_bitmap_info(b, out);
          return llama.heap().i32[index32(out) + 2] === 1;
        });
        if (isAudio !== (input.kind === 'audio')) {
          throw new MediaDecodeError(
            `${input.kind} ${i + 1} holds ${isAudio ? 'audio' : 'an image'}: send it as ${isAudio ? 'input_audio' : 'image_url'}`,
            i,
          );
        }
        llama.withCString(input.hash, (id) => m._hearth_bitmap_set_id(b, id));
      });
      const chunks = llama.withCString(text, (t, len) =>
        llama.withBuffer(4 * (bitmaps.length + 1), (list) => {
          llama.heap().i32.set(bitmaps, index32(list));
          return llama.withBuffer(4, (status) => {
            const cs = m._hearth_mtmd_tokenize(this.ptr, t, len, addSpecial ? 1 : 0, list, bitmaps.length, status);
            if (!cs) {
              const code = llama.heap().i32[index32(status)];
              throw new MediaDecodeError(
                code === 1
                  ? 'the prompt has not one marker per media input'
                  : `the projector could not prepare the media: ${lastError(llama) ?? 'no reason logged'}`,
                -1,
              );
            }
            return cs;
          });
        }),
      );
      try {
        return this.read(chunks);
      } finally {
        m._hearth_chunks_free(chunks);
      }
    } finally {
      for (const b of bitmaps) m._hearth_bitmap_free(b);
    }
  }

  /** The chunk list as tokens with placeholders, each media chunk copied out of the list. */
  private read(chunks: number): MediaPrompt {
    const m = this.llama.mod;
    const tokens: number[] = [];
    const spans: MediaSpan[] = [];
    const free = () => {
      for (const s of spans.splice(0)) m._hearth_chunk_free(s.chunk);
    };
    try {
      const seen = new Map<string, number>();
      for (let i = 0; i < m._hearth_chunks_size(chunks); i++) {
        const chunk = m._hearth_chunk_copy(chunks, i);
        const type = m._hearth_chunk_type(chunk);
        const n = m._hearth_chunk_n_tokens(chunk);
        if (type === 0) {
          const p = m._hearth_chunk_text(chunk);
          tokens.push(...this.llama.heap().i32.subarray(index32(p), index32(p) + n));
          m._hearth_chunk_free(chunk);
          continue;
        }
        const start = tokens.length;
        spans.push({ kind: CHUNK_KIND[type] ?? 'image', start, end: start + n, chunk });
        // An image sliced into tiles gives several chunks of one id (its hash): each gets placeholders of its own.
        const id = m.UTF8ToString(m._hearth_chunk_id(chunk));
        const k = seen.get(id) ?? 0;
        seen.set(id, k + 1);
        tokens.push(...placeholders(`${this.identity}:${id}:${k}`, n, m._hearth_chunk_n_pos(chunk)));
      }
    } catch (err) {
      free();
      throw err;
    }
    return { tokens: Int32Array.from(tokens), spans, free };
  }

  /** Runs the encoder over a media chunk (seconds of work on a CPU); returns its embeddings' pointer, or 0. */
  async encode(ctx: LlamaContext, span: MediaSpan): Promise<number> {
    const m = this.llama.mod;
    if ((await m._hearth_media_encode(ctx.ptr, this.ptr, span.chunk)) !== 0) return 0;
    return m._hearth_media_embd(this.ptr);
  }

  /** Decodes encoded embeddings into sequence `seq` from position `pos` (the span's); llama_decode's status. */
  decode(ctx: LlamaContext, span: MediaSpan, embd: number, seq: number, pos: number): Promise<number> {
    return Promise.resolve(this.llama.mod._hearth_media_decode(ctx.ptr, this.ptr, span.chunk, embd, pos, seq));
  }

  /** The embeddings of the last encode, copied out (tests compare them with native llama.cpp's). */
  embeddings(embd: number, span: MediaSpan): Float32Array {
    const n = (span.end - span.start) * this.llama.mod._hearth_model_n_embd_inp(this.model.ptr);
    return this.llama.heap().f32.slice(index32(embd), index32(embd) + n);
  }
}

/** Placeholders below this take no position (M-RoPE: see the header); those from -1 down to it take one each. */
const HELD = -(2 ** 30);
const SPAN = 2 ** 30 - 1;

/**
 * `n` negative token ids from a media chunk's name, the last n - nPos of them HELD: never a vocabulary token, equal
 * only for the same bytes.
 */
export function placeholders(name: string, n: number, nPos = n): number[] {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  const out: number[] = [];
  for (let k = 0; k < n; k++) out.push((k < nPos ? -1 : HELD - 1) - (((h >>> 2) + k) % SPAN));
  return out;
}

export function isPlaceholder(token: number): boolean {
  return token < 0;
}

/** `tokens` without their placeholders: the text a model without the projector (a draft model) reads. */
export function textOnly(tokens: ArrayLike<number>): number[] {
  const out: number[] = [];
  for (let k = 0; k < tokens.length; k++) if (!isPlaceholder(tokens[k]!)) out.push(tokens[k]!);
  return out;
}

/** The position of the token at index `n` of `tokens` (the next one's, when n is their length): see the header. */
export function positionAt(tokens: ArrayLike<number>, n: number): number {
  let held = 0;
  for (let i = 0; i < n; i++) if (tokens[i]! < HELD) held++;
  return n - held;
}

/** The last error line llama.cpp or mtmd logged. */
function lastError(llama: Llama): string | null {
  const lines = llama.log.since(Math.max(0, llama.log.mark() - 8), true).filter((l) => /error|fail|unable/i.test(l));
  return lines.length ? lines[lines.length - 1]!.trim() : null;
}
