// The probe a backend must pass before Hearth trusts it (self-test.ts): a small llama-architecture model with
// fixed random weights, built here in memory (no download, no asset), whose next-token log-probabilities both the
// WebAssembly engine and the candidate backend compute. Its vocabulary is a few dozen whole words, so the two engines'
// top tokens can be matched by text. Matrices are f16: the type whose GPU arithmetic (shader-f16) has gone wrong.
import { GgufValueType, type GgufKv } from '../core/gguf/reader.ts';
import { encodedRowBytes, encodeRow, ggufBytes, rng, type TensorType } from '../core/gguf/writer.ts';

const WORDS = (
  'the a of and to in is it that was for on are with as his they be at one have this from or had by hot ' +
  'word but what some we can out other were all there when up use your how said an each she which do their time if ' +
  'will way about many then them write would like so these her long make thing see him two has look more day could go'
).split(' ');
/** Prompt of the probe: words of its vocabulary. */
export const PROBE_PROMPT = 'the cat said that the word was long and the day was hot';

/** A probe's size: the self-test's is small (it checks arithmetic); the speed probe's weights (14 MB) outweigh a
 * token's fixed costs on a CPU, as a real model's do. */
export interface ProbeShape {
  embd: number;
  ff: number;
  layers: number;
  /** Output rows of the special tokens (unknown, start, end) zeroed: a greedy answer never ends before its length. */
  endless?: boolean;
}
export const CHECK_PROBE: ProbeShape = { embd: 128, ff: 256, layers: 2 };
export const SPEED_PROBE: ProbeShape = { embd: 384, ff: 1152, layers: 4, endless: true };
const N_HEAD = 4;
const N_HEAD_KV = 2;

export function probeModel(shape: ProbeShape = CHECK_PROBE): Uint8Array {
  const { embd, ff, layers, endless } = shape;
  // SentencePiece-style: '▁' marks a word start; letters cover other words, byte tokens anything else (llama.cpp
  // falls back to them for characters outside the vocabulary).
  const words = [...WORDS.map((w) => `▁${w}`), '▁', ...'abcdefghijklmnopqrstuvwxyz'];
  const bytes = Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
  const tokens = ['<unk>', '<s>', '</s>', ...words, ...bytes];
  const nVocab = tokens.length;
  const firstByte = 3 + words.length;
  const str = (value: string): GgufKv => ({ type: GgufValueType.STRING, value });
  const u32 = (value: number): GgufKv => ({ type: GgufValueType.UINT32, value });
  const f32 = (value: number): GgufKv => ({ type: GgufValueType.FLOAT32, value });
  const arr = (type: GgufValueType, values: Array<string | number>): GgufKv => ({
    type: GgufValueType.ARRAY,
    value: { type, length: values.length, values },
  });
  const kv: Array<[string, GgufKv]> = [
    ['general.architecture', str('llama')],
    ['general.name', str('hearth-probe')],
    ['llama.context_length', u32(256)],
    ['llama.embedding_length', u32(embd)],
    ['llama.block_count', u32(layers)],
    ['llama.feed_forward_length', u32(ff)],
    ['llama.attention.head_count', u32(N_HEAD)],
    ['llama.attention.head_count_kv', u32(N_HEAD_KV)],
    ['llama.rope.dimension_count', u32(embd / N_HEAD)],
    ['llama.attention.layer_norm_rms_epsilon', f32(1e-5)],
    ['tokenizer.ggml.model', str('llama')],
    ['tokenizer.ggml.tokens', arr(GgufValueType.STRING, tokens)],
    [
      'tokenizer.ggml.scores',
      arr(
        GgufValueType.FLOAT32,
        tokens.map((_, i) => -i),
      ),
    ],
    [
      'tokenizer.ggml.token_type',
      arr(
        GgufValueType.INT32,
        tokens.map((_, i) => (i === 0 ? 2 : i < 3 ? 3 : i >= firstByte ? 6 : 1)),
      ),
    ],
    ['tokenizer.ggml.unknown_token_id', u32(0)],
    ['tokenizer.ggml.bos_token_id', u32(1)],
    ['tokenizer.ggml.eos_token_id', u32(2)],
    ['tokenizer.ggml.add_bos_token', { type: GgufValueType.BOOL, value: true }],
    // The prompt is the user's text as it is, so both engines read the same tokens.
    ['tokenizer.chat_template', str('{{ messages[0].content }}')],
  ];
  let seed = 0;
  /** Uniform random rows of standard deviation `std` (0: ones); rows from `zeroFrom` on, and before `zeroBelow`, are
   * zero (ProbeShape.endless). */
  const tensor = (name: string, dims: number[], type: TensorType, std: number, zeroFrom = Infinity, zeroBelow = 0) => {
    const next = rng(++seed * 7919);
    const rows = dims.slice(1).reduce((x, y) => x * y, 1);
    const rowBytes = encodedRowBytes(type, dims[0]!);
    const data = new Uint8Array(rows * rowBytes);
    const row = new Float32Array(dims[0]!);
    for (let r = 0; r < rows; r++) {
      for (let i = 0; i < row.length; i++) {
        row[i] = r >= zeroFrom || r < zeroBelow ? 0 : std === 0 ? 1 : (next() * 2 - 1) * std * Math.sqrt(3);
      }
      encodeRow(type, row, data.subarray(r * rowBytes, (r + 1) * rowBytes));
    }
    return { name, dims, type, data };
  };
  const headDim = embd / N_HEAD;
  const t = [
    tensor('token_embd.weight', [embd, nVocab], 'f16', 1),
    tensor('output_norm.weight', [embd], 'f32', 0),
    // Byte tokens get logit 0, far below the likeliest words: the top tokens are whole words, comparable by text.
    tensor('output.weight', [embd, nVocab], 'f16', 0.5, firstByte, endless ? 3 : 0),
  ];
  for (let i = 0; i < layers; i++) {
    t.push(
      tensor(`blk.${i}.attn_norm.weight`, [embd], 'f32', 0),
      tensor(`blk.${i}.attn_q.weight`, [embd, embd], 'f16', 0.1),
      tensor(`blk.${i}.attn_k.weight`, [embd, headDim * N_HEAD_KV], 'f16', 0.1),
      tensor(`blk.${i}.attn_v.weight`, [embd, headDim * N_HEAD_KV], 'f16', 0.1),
      tensor(`blk.${i}.attn_output.weight`, [embd, embd], 'f16', 0.1),
      tensor(`blk.${i}.ffn_norm.weight`, [embd], 'f32', 0),
      tensor(`blk.${i}.ffn_gate.weight`, [embd, ff], 'f16', 0.1),
      tensor(`blk.${i}.ffn_up.weight`, [embd, ff], 'f16', 0.1),
      tensor(`blk.${i}.ffn_down.weight`, [ff, embd], 'f16', 0.1),
    );
  }
  return ggufBytes(kv, t);
}
