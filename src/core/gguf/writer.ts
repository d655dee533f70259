// Writes GGUF v3: key-values, tensor infos, then the tensor data, aligned. The engine builds its WebGPU probe model
// with it (api/probe-model.ts); the test-model generator writes files with it
// (test/fixtures/gguf-writer.ts).
import { GGUF_MAGIC, GgufValueType, tensorBytes, type GgufKv, type GgufScalar } from './reader.ts';

export const GGML_TYPE = { f32: 0, f16: 1, q4_0: 2, q8_0: 8 } as const;
export type TensorType = keyof typeof GGML_TYPE;

export interface TensorInfo {
  name: string;
  /** ggml order: dims[0] is the row length. */
  dims: number[];
  type: TensorType;
}

const ALIGNMENT = 32;

class ByteSink {
  private parts: Uint8Array[] = [];
  size = 0;
  push(b: Uint8Array) {
    this.parts.push(b);
    this.size += b.length;
  }
  u32(v: number) {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setUint32(0, v, true);
    this.push(b);
  }
  u64(v: number | bigint) {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, BigInt(v), true);
    this.push(b);
  }
  string(s: string) {
    const b = new TextEncoder().encode(s);
    this.u64(b.length);
    this.push(b);
  }
  scalar(type: GgufValueType, v: GgufScalar) {
    const b = new Uint8Array(8);
    const d = new DataView(b.buffer);
    switch (type) {
      case GgufValueType.UINT8:
        d.setUint8(0, Number(v));
        return this.push(b.subarray(0, 1));
      case GgufValueType.INT8:
        d.setInt8(0, Number(v));
        return this.push(b.subarray(0, 1));
      case GgufValueType.BOOL:
        d.setUint8(0, v ? 1 : 0);
        return this.push(b.subarray(0, 1));
      case GgufValueType.UINT16:
        d.setUint16(0, Number(v), true);
        return this.push(b.subarray(0, 2));
      case GgufValueType.INT16:
        d.setInt16(0, Number(v), true);
        return this.push(b.subarray(0, 2));
      case GgufValueType.UINT32:
        d.setUint32(0, Number(v), true);
        return this.push(b.subarray(0, 4));
      case GgufValueType.INT32:
        d.setInt32(0, Number(v), true);
        return this.push(b.subarray(0, 4));
      case GgufValueType.FLOAT32:
        d.setFloat32(0, Number(v), true);
        return this.push(b.subarray(0, 4));
      case GgufValueType.UINT64:
        d.setBigUint64(0, BigInt(v), true);
        return this.push(b);
      case GgufValueType.INT64:
        d.setBigInt64(0, BigInt(v), true);
        return this.push(b);
      case GgufValueType.FLOAT64:
        d.setFloat64(0, Number(v), true);
        return this.push(b);
      case GgufValueType.STRING:
        return this.string(String(v));
      default:
        throw new Error(`cannot write GGUF value type ${type}`);
    }
  }
  bytes(): Uint8Array {
    const out = new Uint8Array(this.size);
    let o = 0;
    for (const p of this.parts) {
      out.set(p, o);
      o += p.length;
    }
    return out;
  }
}

export function pad(n: number) {
  return (ALIGNMENT - (n % ALIGNMENT)) % ALIGNMENT;
}

/** The header (padded to the alignment) and each tensor's byte size; each tensor's data follows, padded with pad(). */
export function ggufHeader(
  kv: Array<[string, GgufKv]>,
  tensors: TensorInfo[],
): { header: Uint8Array; sizes: number[] } {
  const head = new ByteSink();
  head.u32(GGUF_MAGIC);
  head.u32(3);
  head.u64(tensors.length);
  head.u64(kv.length);
  for (const [key, { type, value }] of kv) {
    head.string(key);
    head.u32(type);
    if (type === GgufValueType.ARRAY) {
      if (typeof value !== 'object' || value === null || !('values' in value)) {
        throw new Error(`${key}: array expected`);
      }
      head.u32(value.type);
      head.u64(value.values.length);
      for (const v of value.values) head.scalar(value.type, v);
    } else {
      head.scalar(type, value as GgufScalar);
    }
  }
  let offset = 0;
  const sizes: number[] = [];
  for (const t of tensors) {
    const size = tensorBytes(GGML_TYPE[t.type], t.dims);
    if (size === null || !Number.isInteger(size)) {
      throw new Error(`${t.name}: dims ${t.dims} do not fit type ${t.type}`);
    }
    head.string(t.name);
    head.u32(t.dims.length);
    for (const d of t.dims) head.u64(d);
    head.u32(GGML_TYPE[t.type]);
    head.u64(offset);
    sizes.push(size);
    offset += size + pad(size);
  }
  head.push(new Uint8Array(pad(head.size)));
  return { header: head.bytes(), sizes };
}

/** A whole GGUF in memory (small models only): the header, then each tensor's bytes. */
export function ggufBytes(kv: Array<[string, GgufKv]>, tensors: Array<TensorInfo & { data: Uint8Array }>): Uint8Array {
  const { header, sizes } = ggufHeader(kv, tensors);
  const out = new Uint8Array(header.length + sizes.reduce((n, s) => n + s + pad(s), 0));
  out.set(header);
  let o = header.length;
  tensors.forEach((t, i) => {
    if (t.data.length !== sizes[i]) throw new Error(`${t.name}: ${t.data.length} bytes, expected ${sizes[i]}`);
    out.set(t.data, o);
    o += sizes[i]! + pad(sizes[i]!);
  });
  return out;
}

// --- weights ----------------------------------------------------------------------------------------------------

export function encodedRowBytes(type: TensorType, n: number): number {
  if (type === 'f32') return 4 * n;
  if (type === 'f16') return 2 * n;
  if (type === 'q8_0') return (n / 32) * 34;
  throw new Error(`no encoder for ${type}`);
}

export function encodeRow(type: TensorType, v: Float32Array, out: Uint8Array) {
  const d = new DataView(out.buffer, out.byteOffset, out.byteLength);
  if (type === 'f32') {
    for (let i = 0; i < v.length; i++) d.setFloat32(4 * i, v[i]!, true);
  } else if (type === 'f16') {
    for (let i = 0; i < v.length; i++) d.setUint16(2 * i, toHalf(v[i]!), true);
  } else {
    // Q8_0: blocks of 32 values as one f16 scale and 32 int8s (ggml's quantize_row_q8_0).
    for (let b = 0; b < v.length / 32; b++) {
      let amax = 0;
      for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs(v[b * 32 + i]!));
      const scale = amax / 127;
      const inv = scale ? 1 / scale : 0;
      d.setUint16(b * 34, toHalf(scale), true);
      for (let i = 0; i < 32; i++) d.setInt8(b * 34 + 2 + i, Math.round(v[b * 32 + i]! * inv));
    }
  }
}

const f32 = new Float32Array(1);
const u32v = new Uint32Array(f32.buffer);

/** float32 to IEEE half (round to nearest even), enough for weights (no NaN handling needed). */
function toHalf(x: number): number {
  f32[0] = x;
  const bits = u32v[0]!;
  const sign = (bits >>> 16) & 0x8000;
  const exp = ((bits >>> 23) & 0xff) - 127 + 15;
  let mant = bits & 0x7fffff;
  if (exp >= 31) return sign | 0x7c00;
  if (exp <= 0) {
    if (exp < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - exp;
    const half = mant >> shift;
    const rest = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    return sign | (half + (rest > mid || (rest === mid && half & 1) ? 1 : 0));
  }
  const half = (exp << 10) | (mant >> 13);
  const rest = mant & 0x1fff;
  return sign | (half + (rest > 0x1000 || (rest === 0x1000 && half & 1) ? 1 : 0));
}

/** mulberry32: small, fast, good enough for weights. Returns numbers in [0, 1). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
