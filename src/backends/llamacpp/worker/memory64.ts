// The memory64 build (hearth-mt64) for a model the wasm32 builds' 4 GiB heap cannot hold on the CPU. The engine starts
// on a wasm32 build, which is faster (64-bit addresses cost 4–6%: docs/benchmarks.md, "What memory64 costs"), and moves
// to a memory64 worker only when a load is refused as too large for its heap and would fit 16 GiB. The refusal comes
// before any download where the server announces the size (a URL, the Hub), else once the file is in the model store:
// either way the model is downloaded once, and the move costs a worker start. Where the move cannot happen, the refusal
// says why.
import { MEMORY64_MAX_MODEL_BYTES } from '../../../core/limits.ts';
import { ModelLoadError } from '../../../errors.ts';
import type { HostInit } from './protocol.ts';

/** The smallest module with a 64-bit memory: it validates where the engine has memory64 (Chromium 133+, Firefox 134+,
 * Node 24+). */
const PROBE = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x05, 0x03, 0x01, 0x04, 0x00]);

export function hasMemory64(): boolean {
  try {
    return WebAssembly.validate(PROBE);
  } catch {
    return false;
  }
}

/**
 * The start of the memory64 build for this engine, or why it cannot run here; null where no move applies (the GPU
 * engine, which keeps its weights out of the heap; a maxModelBytes the page set, which is its own limit).
 */
export function memory64Init(init: HostInit, memory64 = hasMemory64()): HostInit | string | null {
  if (init.variant === 'webgpu' || init.variant === 'mt64' || init.maxModelBytes !== undefined) return null;
  if (!memory64) return 'this browser has no 64-bit WebAssembly memory (memory64: Chromium 133+, Firefox 134+)';
  if (!init.variant.startsWith('mt')) {
    return 'the memory64 build runs with threads, which need a cross-origin isolated page (COOP and COEP headers)';
  }
  if (!init.assets['hearth-mt64.js'] || !init.assets['hearth-mt64.wasm']) {
    return "the memory64 build is not among the engine's files (npm run build:wasm -- --memory64)";
  }
  return {
    ...init,
    variant: 'mt64',
    buildReason: `memory64: the model is larger than the ${init.variant} build's 4 GiB heap; ${init.threads} threads`,
  };
}

/** A CPU engine's refusal of a model too large for its heap (core/models/check.ts: tooLarge) that memory64's holds. */
export function fitsMemory64(err: unknown): err is ModelLoadError {
  const e = err as ModelLoadError | null;
  const size = e?.details?.size;
  return (
    e?.name === 'ModelLoadError' &&
    e.code === 'too_large' &&
    typeof size === 'number' &&
    size <= MEMORY64_MAX_MODEL_BYTES &&
    !('gpu' in e.details) &&
    !('heapBytes' in e.details)
  );
}

/** The refusal, saying why the memory64 build, which would hold the model, did not take it. */
export function withoutMemory64(err: ModelLoadError, why: string): ModelLoadError {
  return new ModelLoadError(
    `${err.message} The memory64 build would hold it, but it cannot run here: ${why}.`,
    'too_large',
    { ...err.details, memory64: why },
  );
}
