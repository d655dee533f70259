// What a saved state is only valid for: the model file, the llama.cpp build and the KV cache's layout.
import { hashBytes } from './hash.ts';
import type { ModelFile } from '../source.ts';
import { FORMAT_VERSION } from './store.ts';

/** Identifies a model file without reading all of it: its size, its header (metadata) and the end of its weights. */
export async function fingerprintFile(file: ModelFile): Promise<string> {
  const span = Math.min(file.size, 1 << 20);
  const head = await file.read(0, span);
  const tail = await file.read(file.size - span, span);
  return `${file.size}-${hashBytes(head)}-${hashBytes(tail)}`;
}

/**
 * The layout string every record carries and is checked against. n_ctx is not part of it: a sequence's state is its
 * cells and their positions, and a record is only restored into a context large enough for it.
 */
export function layoutKey(fingerprint: string, llamaBuild: string, kv: { typeK: string; typeV: string; flashAttn: number }): string {
  return JSON.stringify({ format: FORMAT_VERSION, model: fingerprint, llama: llamaBuild, typeK: kv.typeK, typeV: kv.typeV, flashAttn: kv.flashAttn, unified: true });
}
