// sha256 of stored files, read back in slices (WebCrypto hashes only whole buffers; a model is hundreds of MB), and
// of short texts (the store's folder names). A model's identity — what saved KV state is matched against — is the
// sha256 of its files, so the same file gives the same identity whether it came from a URL, the Hub, a File or disk.
import { createSHA256, sha256 } from 'hash-wasm';
import { AbortError } from '../../errors.ts';
import type { ModelPart } from './file.ts';

const SLICE = 8 << 20;

export async function sha256Hex(part: ModelPart, onBytes: (n: number) => void, signal?: AbortSignal): Promise<string> {
  const hash = await createSHA256();
  hash.init();
  for (let offset = 0; offset < part.size; offset += SLICE) {
    if (signal?.aborted) throw new AbortError('model check aborted');
    const bytes = await part.read(offset, Math.min(SLICE, part.size - offset));
    hash.update(bytes);
    onBytes(bytes.length);
  }
  return hash.digest('hex');
}

/** The sha256 (hex) of a short text, or of bytes already in memory (an image of a request). */
export function sha256InMemory(data: string | Uint8Array): Promise<string> {
  return sha256(data);
}

/** The identity of a model whose files have these sha256s (in order: a split model's parts). */
export function modelIdentity(hashes: string[]): string {
  return `sha256:${hashes.join('+')}`;
}
