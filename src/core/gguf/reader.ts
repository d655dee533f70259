// A GGUF header reader. The engine uses it to refuse bad files with a clear reason before llama.cpp sees them
// (not a GGUF, truncated, too large for the wasm heap); the test-model generator uses it to copy tokenizers.
// Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md

export const GGUF_MAGIC = 0x46554747; // "GGUF" little-endian

export enum GgufValueType {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
}

export type GgufScalar = number | bigint | boolean | string;
export type GgufValue = GgufScalar | GgufArray;
export interface GgufArray {
  type: GgufValueType;
  length: number;
  /** Empty when the header was read with skipArrays. */
  values: GgufScalar[];
}

export interface GgufKv {
  type: GgufValueType;
  value: GgufValue;
}

export interface GgufTensorInfo {
  name: string;
  dims: number[];
  type: number;
  /** Offset of the tensor's data from the start of the data section. */
  offset: number;
}

export interface GgufHeader {
  version: number;
  kv: Map<string, GgufKv>;
  tensors: GgufTensorInfo[];
  /** File offset where tensor data begins. */
  dataOffset: number;
  /** File size the tensors need (dataOffset + end of the last tensor), when every tensor type is known. */
  expectedSize: number | null;
}

/** Block size and bytes per block of the ggml tensor types, by ggml_type id. */
const TYPE_SIZES: Record<number, [block: number, bytes: number]> = {
  0: [1, 4],
  1: [1, 2],
  2: [32, 18],
  3: [32, 20],
  6: [32, 22],
  7: [32, 24],
  8: [32, 34],
  9: [32, 36],
  10: [256, 84],
  11: [256, 110],
  12: [256, 144],
  13: [256, 176],
  14: [256, 210],
  15: [256, 292],
  24: [1, 1],
  25: [1, 2],
  26: [1, 4],
  27: [1, 8],
  28: [1, 8],
  30: [1, 2],
};

export function tensorBytes(type: number, dims: number[]): number | null {
  const size = TYPE_SIZES[type];
  if (!size) return null;
  const n = dims.reduce((a, b) => a * b, 1);
  return (n / size[0]) * size[1];
}

export class GgufFormatError extends Error {
  constructor(
    message: string,
    readonly reason: 'not_gguf' | 'truncated' | 'invalid_file',
  ) {
    super(message);
  }
}

/** Reads `length` bytes at `offset`; may return fewer at the end of the file. */
export type ByteReader = (offset: number, length: number) => Promise<Uint8Array>;

// Headers are parsed from memory: read a prefix of the file, parse it synchronously, and read a larger prefix when
// the header turns out longer (vocabularies make headers of a few MB).
const FIRST_READ = 8 << 20;

class OutOfData extends Error {}

class Cursor {
  pos = 0;
  private view: DataView;
  constructor(
    private buf: Uint8Array,
    private fileSize: number,
  ) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  private take(n: number): number {
    const at = this.pos;
    if (at + n > this.fileSize) {
      throw new GgufFormatError('the file is truncated: it ends inside the GGUF header', 'truncated');
    }
    if (at + n > this.buf.length) throw new OutOfData();
    this.pos += n;
    return at;
  }

  u32() {
    return this.view.getUint32(this.take(4), true);
  }
  u64() {
    const v = this.view.getBigUint64(this.take(8), true);
    if (v > BigInt(this.fileSize)) {
      throw new GgufFormatError(
        `the file is truncated or corrupt: its header declares ${v} items or bytes but the file has ${this.fileSize} bytes`,
        'truncated',
      );
    }
    return Number(v);
  }
  skipString() {
    this.take(this.u64());
  }
  skip(n: number) {
    this.take(n);
  }
  string(): string {
    const len = this.u64();
    const at = this.take(len);
    return new TextDecoder().decode(this.buf.subarray(at, at + len));
  }
  scalar(type: GgufValueType): GgufScalar {
    const v = this.view;
    switch (type) {
      case GgufValueType.UINT8:
        return v.getUint8(this.take(1));
      case GgufValueType.INT8:
        return v.getInt8(this.take(1));
      case GgufValueType.UINT16:
        return v.getUint16(this.take(2), true);
      case GgufValueType.INT16:
        return v.getInt16(this.take(2), true);
      case GgufValueType.UINT32:
        return v.getUint32(this.take(4), true);
      case GgufValueType.INT32:
        return v.getInt32(this.take(4), true);
      case GgufValueType.FLOAT32:
        return v.getFloat32(this.take(4), true);
      case GgufValueType.BOOL:
        return v.getUint8(this.take(1)) !== 0;
      case GgufValueType.STRING:
        return this.string();
      case GgufValueType.UINT64:
        return v.getBigUint64(this.take(8), true);
      case GgufValueType.INT64:
        return v.getBigInt64(this.take(8), true);
      case GgufValueType.FLOAT64:
        return v.getFloat64(this.take(8), true);
      default:
        throw new GgufFormatError(`unknown GGUF value type ${type}`, 'invalid_file');
    }
  }
}

const SCALAR_BYTES: Partial<Record<GgufValueType, number>> = {
  [GgufValueType.UINT8]: 1,
  [GgufValueType.INT8]: 1,
  [GgufValueType.BOOL]: 1,
  [GgufValueType.UINT16]: 2,
  [GgufValueType.INT16]: 2,
  [GgufValueType.UINT32]: 4,
  [GgufValueType.INT32]: 4,
  [GgufValueType.FLOAT32]: 4,
  [GgufValueType.UINT64]: 8,
  [GgufValueType.INT64]: 8,
  [GgufValueType.FLOAT64]: 8,
};

export interface ReadOptions {
  /** Walk over array values without decoding them (the vocabulary is most of a header). */
  skipArrays?: boolean;
}

export async function readGgufHeader(read: ByteReader, fileSize: number, opts: ReadOptions = {}): Promise<GgufHeader> {
  if (fileSize < 24) {
    throw new GgufFormatError(`the file is ${fileSize} bytes, too small to be a GGUF model`, 'not_gguf');
  }
  for (let size = Math.min(FIRST_READ, fileSize); ; size = Math.min(size * 4, fileSize)) {
    const buf = await read(0, size);
    try {
      return parseHeader(new Cursor(buf, fileSize), opts);
    } catch (err) {
      if (!(err instanceof OutOfData)) throw err;
      if (size >= fileSize) {
        throw new GgufFormatError('the file is truncated: it ends inside the GGUF header', 'truncated');
      }
    }
  }
}

function parseHeader(c: Cursor, opts: ReadOptions): GgufHeader {
  if (c.u32() !== GGUF_MAGIC) {
    throw new GgufFormatError('the file does not start with "GGUF": it is not a GGUF model', 'not_gguf');
  }
  const version = c.u32();
  if (version < 2 || version > 3) {
    throw new GgufFormatError(`GGUF version ${version} is not supported (2 or 3 are)`, 'invalid_file');
  }
  const nTensors = c.u64();
  const nKv = c.u64();
  const kv = new Map<string, GgufKv>();
  for (let i = 0; i < nKv; i++) {
    const key = c.string();
    const type = c.u32() as GgufValueType;
    if (type === GgufValueType.ARRAY) {
      const elemType = c.u32() as GgufValueType;
      const n = c.u64();
      if (opts.skipArrays) {
        skipArray(c, elemType, n);
        kv.set(key, { type, value: { type: elemType, length: n, values: [] } });
      } else {
        const values: GgufScalar[] = new Array(n);
        for (let j = 0; j < n; j++) values[j] = c.scalar(elemType);
        kv.set(key, { type, value: { type: elemType, length: n, values } });
      }
    } else {
      kv.set(key, { type, value: c.scalar(type) });
    }
  }
  const tensors: GgufTensorInfo[] = [];
  for (let i = 0; i < nTensors; i++) {
    const name = c.string();
    const nDims = c.u32();
    if (nDims > 8) throw new GgufFormatError(`tensor ${name} has ${nDims} dimensions`, 'invalid_file');
    const dims: number[] = [];
    for (let d = 0; d < nDims; d++) dims.push(c.u64());
    const type = c.u32();
    const offset = c.u64();
    tensors.push({ name, dims, type, offset });
  }
  const alignment = Number(kv.get('general.alignment')?.value ?? 32);
  const dataOffset = Math.ceil(c.pos / alignment) * alignment;
  let expectedSize: number | null = dataOffset;
  for (const t of tensors) {
    const bytes = tensorBytes(t.type, t.dims);
    if (bytes === null) {
      expectedSize = null;
      break;
    }
    expectedSize = Math.max(expectedSize, dataOffset + t.offset + bytes);
  }
  return { version, kv, tensors, dataOffset, expectedSize };
}

function skipArray(c: Cursor, elemType: GgufValueType, n: number) {
  if (elemType === GgufValueType.STRING) {
    for (let j = 0; j < n; j++) c.skipString();
    return;
  }
  const size = SCALAR_BYTES[elemType];
  if (size === undefined) throw new GgufFormatError(`unsupported GGUF array element type ${elemType}`, 'invalid_file');
  c.skip(n * size);
}

/**
 * Why a file that starts with `head` (its first 8 bytes) cannot be a GGUF model, or null when it can. A download
 * checks this on the first bytes that arrive: a server that answers a wrong path with a web page is found at once.
 */
export function notGgufStart(head: Uint8Array): string | null {
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  if (head.length >= 4 && view.getUint32(0, true) === GGUF_MAGIC) {
    const version = head.length >= 8 ? view.getUint32(4, true) : 2;
    return version >= 2 && version <= 3 ? null : `it is GGUF version ${version}, and only 2 and 3 are supported`;
  }
  const text = new TextDecoder('utf-8', { fatal: false }).decode(head).replace(/[^\x20-\x7e]/g, '·');
  return `it starts with "${text}", not "GGUF"${/^\s*</.test(text) ? ' (the server sent a web page: check the URL)' : ''}`;
}

/** Reads the header and checks that the file holds all the tensor data the header promises. */
export async function checkGgufFile(read: ByteReader, fileSize: number): Promise<GgufHeader> {
  const header = await readGgufHeader(read, fileSize, { skipArrays: true });
  if (header.expectedSize !== null && header.expectedSize > fileSize) {
    throw new GgufFormatError(
      `the file is truncated: its tensors need ${header.expectedSize} bytes but it has ${fileSize}`,
      'truncated',
    );
  }
  return header;
}
