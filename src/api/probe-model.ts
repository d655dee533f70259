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

const N_EMBD = 128;
const N_HEAD = 4;
const N_HEAD_KV = 2;
const N_FF = 256;
const N_LAYER = 2;

export function probeModel(): Uint8Array {
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
    ['llama.embedding_length', u32(N_EMBD)],
    ['llama.block_count', u32(N_LAYER)],
    ['llama.feed_forward_length', u32(N_FF)],
    ['llama.attention.head_count', u32(N_HEAD)],
    ['llama.attention.head_count_kv', u32(N_HEAD_KV)],
    ['llama.rope.dimension_count', u32(N_EMBD / N_HEAD)],
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
  /** Uniform random rows of standard deviation `std` (0: ones); rows from `zeroFrom` on are zero. */
  const tensor = (name: string, dims: number[], type: TensorType, std: number, zeroFrom = Infinity) => {
    const next = rng(++seed * 7919);
    const rows = dims.slice(1).reduce((x, y) => x * y, 1);
    const rowBytes = encodedRowBytes(type, dims[0]!);
    const data = new Uint8Array(rows * rowBytes);
    const row = new Float32Array(dims[0]!);
    for (let r = 0; r < rows; r++) {
      for (let i = 0; i < row.length; i++) {
        row[i] = r >= zeroFrom ? 0 : std === 0 ? 1 : (next() * 2 - 1) * std * Math.sqrt(3);
      }
      encodeRow(type, row, data.subarray(r * rowBytes, (r + 1) * rowBytes));
    }
    return { name, dims, type, data };
  };
  const headDim = N_EMBD / N_HEAD;
  const t = [
    tensor('token_embd.weight', [N_EMBD, nVocab], 'f16', 1),
    tensor('output_norm.weight', [N_EMBD], 'f32', 0),
    // Byte tokens get logit 0, far below the likeliest words: the top tokens are whole words, comparable by text.
    tensor('output.weight', [N_EMBD, nVocab], 'f16', 0.5, firstByte),
  ];
  for (let i = 0; i < N_LAYER; i++) {
    t.push(
      tensor(`blk.${i}.attn_norm.weight`, [N_EMBD], 'f32', 0),
      tensor(`blk.${i}.attn_q.weight`, [N_EMBD, N_EMBD], 'f16', 0.1),
      tensor(`blk.${i}.attn_k.weight`, [N_EMBD, headDim * N_HEAD_KV], 'f16', 0.1),
      tensor(`blk.${i}.attn_v.weight`, [N_EMBD, headDim * N_HEAD_KV], 'f16', 0.1),
      tensor(`blk.${i}.attn_output.weight`, [N_EMBD, N_EMBD], 'f16', 0.1),
      tensor(`blk.${i}.ffn_norm.weight`, [N_EMBD], 'f32', 0),
      tensor(`blk.${i}.ffn_gate.weight`, [N_EMBD, N_FF], 'f16', 0.1),
      tensor(`blk.${i}.ffn_up.weight`, [N_EMBD, N_FF], 'f16', 0.1),
      tensor(`blk.${i}.ffn_down.weight`, [N_FF, N_EMBD], 'f16', 0.1),
    );
  }
  return ggufBytes(kv, t);
}
