// The GGUF header: what the engine's writer makes (the WebGPU probe model, the test models) the reader reads back, value
// for value; offsets past 4 GiB (a 7–8B model's tensors) read exactly; a file cut short or not GGUF refused with the
// reason a user is told. The files are virtual: a header, and zeros past it that are never materialised.
import { describe, expect, it } from 'vitest';
import { heapShare } from '../../src/core/models/check.ts';
import { type GgufKv, GgufValueType, checkGgufFile, readGgufHeader } from '../../src/core/gguf/reader.ts';
import { GGML_TYPE, ggufHeader, pad, type TensorInfo } from '../../src/core/gguf/writer.ts';

const GiB = 2 ** 30;

/** A file of `size` bytes that starts with `head`; zeros after it (never allocated whole). */
const virtualFile = (head: Uint8Array) => async (offset: number, length: number) => {
  const out = new Uint8Array(length);
  if (offset < head.length) out.set(head.subarray(offset, Math.min(head.length, offset + length)));
  return out;
};

const KV: Array<[string, GgufKv]> = [
  ['general.architecture', { type: GgufValueType.STRING, value: 'llama' }],
  ['general.name', { type: GgufValueType.STRING, value: 'Tëst — 模型' }],
  ['llama.block_count', { type: GgufValueType.UINT32, value: 32 }],
  ['llama.rope.freq_base', { type: GgufValueType.FLOAT32, value: 500000 }],
  ['llama.attention.layer_norm_rms_epsilon', { type: GgufValueType.FLOAT32, value: 0.5 }],
  ['tokenizer.ggml.add_bos_token', { type: GgufValueType.BOOL, value: true }],
  ['general.file_type', { type: GgufValueType.INT32, value: -7 }],
  ['general.size', { type: GgufValueType.UINT64, value: 2n ** 40n + 3n }],
  [
    'tokenizer.ggml.tokens',
    { type: GgufValueType.ARRAY, value: { type: GgufValueType.STRING, length: 3, values: ['<s>', 'a', '▁b'] } },
  ],
  [
    'tokenizer.ggml.token_type',
    { type: GgufValueType.ARRAY, value: { type: GgufValueType.INT32, length: 3, values: [3, 1, -1] } },
  ],
];

/** Llama-3.1-8B's embeddings and output, and two of each block's matrices (f16: 6.9 GB, offsets well past 4 GiB), without their data. */
function eightB(): TensorInfo[] {
  const t: TensorInfo[] = [{ name: 'token_embd.weight', dims: [4096, 128256], type: 'f16' }];
  for (let i = 0; i < 32; i++) {
    t.push({ name: `blk.${i}.attn_q.weight`, dims: [4096, 4096], type: 'f16' });
    t.push({ name: `blk.${i}.ffn_up.weight`, dims: [4096, 14336], type: 'f16' });
  }
  t.push({ name: 'output.weight', dims: [4096, 128256], type: 'f16' });
  return t;
}

describe('GGUF header', () => {
  it('reads back every value the writer wrote, and the tensors with their offsets', async () => {
    const tensors: TensorInfo[] = [
      { name: 'a', dims: [64, 3], type: 'f32' },
      { name: 'b', dims: [32, 5], type: 'q8_0' },
      { name: 'c', dims: [7], type: 'f16' },
    ];
    const { header, sizes } = ggufHeader(KV, tensors);
    const size = header.length + sizes.reduce((n, s) => n + s + pad(s), 0);
    const read = await readGgufHeader(virtualFile(header), size);
    expect(read.version).toBe(3);
    expect([...read.kv.entries()]).toEqual(
      KV.map(([k, v]) => [k, v.type === GgufValueType.FLOAT32 ? { ...v, value: Math.fround(v.value as number) } : v]),
    );
    expect(read.dataOffset).toBe(header.length);
    expect(read.tensors.map((t) => [t.name, t.dims, t.type, t.offset])).toEqual([
      ['a', [64, 3], GGML_TYPE.f32, 0],
      ['b', [32, 5], GGML_TYPE.q8_0, 768],
      ['c', [7], GGML_TYPE.f16, 768 + 170 + pad(170)],
    ]);
    expect(read.expectedSize).toBe(header.length + 768 + 170 + pad(170) + 14);
  });

  it('an 8B model: offsets past 4 GiB read exactly; its tensor data checked against the file size', async () => {
    const tensors = eightB();
    const { header, sizes } = ggufHeader(KV, tensors);
    const size = header.length + sizes.reduce((n, s) => n + s + pad(s), 0);
    expect(size).toBeGreaterThan(6 * GiB);
    const read = await checkGgufFile(virtualFile(header), size);
    let offset = 0;
    read.tensors.forEach((t, i) => {
      expect(t.offset).toBe(offset);
      offset += sizes[i]! + pad(sizes[i]!);
    });
    expect(read.tensors.at(-1)!.offset).toBeGreaterThan(4 * GiB);
    expect(read.expectedSize).toBe(size);
    // On the GPU engine the heap keeps the input embeddings (1 GB here), and tensors over the binding limit.
    expect(heapShare([read], 2 * GiB)).toEqual({
      bytes: 4096 * 128256 * 2,
      embeddings: 4096 * 128256 * 2,
      unbindable: [],
    });
    expect(heapShare([read], 128 * 2 ** 20).unbindable).toEqual(['output.weight']);
  });

  it('refuses a file cut short, in its header or its tensor data, and one that is not GGUF, saying which', async () => {
    const { header, sizes } = ggufHeader(KV, eightB());
    const size = header.length + sizes.reduce((n, s) => n + s + pad(s), 0);
    await expect(checkGgufFile(virtualFile(header), size - 1)).rejects.toMatchObject({ reason: 'truncated' });
    await expect(readGgufHeader(virtualFile(header), header.length - 40)).rejects.toMatchObject({
      reason: 'truncated',
    });
    const page = new TextEncoder().encode('<!doctype html><title>Not found</title>');
    await expect(readGgufHeader(virtualFile(page), page.length)).rejects.toMatchObject({ reason: 'not_gguf' });
  });
});
