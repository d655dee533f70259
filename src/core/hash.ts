// Fast non-cryptographic 64-bit hashes (two independent 32-bit lanes): checksums of saved KV chunks, which must catch
// corruption (not tampering), and keys for message prefixes and prompts. About 1 GB/s in V8, so checking a restored
// state costs little next to reading it.

export function hashBytes(bytes: Uint8Array): string {
  let h1 = 0x9e3779b1 ^ bytes.length;
  let h2 = 0x85ebca77 ^ Math.imul(bytes.length, 0xc2b2ae3d);
  const words = bytes.length >>> 2;
  // Word access needs 4-byte alignment; buffers from wasm, IndexedDB and slice() start at offset 0.
  const w32 =
    bytes.byteOffset % 4 === 0
      ? new Uint32Array(bytes.buffer, bytes.byteOffset, words)
      : new Uint32Array(bytes.slice(0, words * 4).buffer);
  for (let i = 0; i < words; i++) {
    const w = w32[i]!;
    h1 = Math.imul(rotl(h1 ^ w, 13), 0x9e3779b1);
    h2 = Math.imul(rotl(h2 + w, 17), 0x27d4eb2f) ^ h1;
  }
  for (let i = words * 4; i < bytes.length; i++) {
    h1 = Math.imul(rotl(h1 ^ bytes[i]!, 13), 0x9e3779b1);
    h2 = Math.imul(rotl(h2 + bytes[i]!, 17), 0x27d4eb2f) ^ h1;
  }
  return hex(fmix(h1 ^ h2)) + hex(fmix(h2 + h1));
}

const encoder = new TextEncoder();

export function hashText(text: string): string {
  return hashBytes(encoder.encode(text));
}

export function hashTokens(tokens: ArrayLike<number>): string {
  return hashBytes(new Uint8Array(Int32Array.from(tokens).buffer));
}

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

// murmur3's finaliser: every input bit affects every output bit.
function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

const hex = (n: number) => n.toString(16).padStart(8, '0');
