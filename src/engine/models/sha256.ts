// The sha256 of a stored file, read back in slices (WebCrypto hashes only whole buffers; a model is hundreds of MB).
import { createSHA256 } from 'hash-wasm';
import { AbortError } from '../../errors.ts';
import type { ModelPart } from '../source.ts';

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
