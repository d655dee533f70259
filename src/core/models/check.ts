// The checks a model file passes before any engine reads it: its size against the heap, its GGUF header, every part
// holding the tensor data its header promises, and (for the wasm engine) weight types with a wasm SIMD kernel. Each
// refusal is a ModelLoadError that says what to do.
import { AbortError, ModelLoadError } from '../../errors.ts';
import { checkGgufFile, GgufFormatError, type GgufHeader } from '../gguf/reader.ts';
import type { ModelFile } from './file.ts';
import { checkTensorTypes } from '../gguf/tensor-types.ts';
import { formatBytes } from '../bytes.ts';

/** `tensorTypes`: also refuse weights without a wasm SIMD kernel (unless allowScalarKernels). */
export async function checkModelFile(
  file: ModelFile,
  maxBytes: number,
  opts: { signal?: AbortSignal; allowScalarKernels?: boolean; tensorTypes: boolean },
): Promise<void> {
  if (file.size > maxBytes) throw tooLarge(file.name, file.size, maxBytes);
  for (const part of file.parts) {
    let header: GgufHeader;
    try {
      header = await checkGgufFile(part.read, part.size);
    } catch (err) {
      if (err instanceof GgufFormatError) {
        throw new ModelLoadError(
          `${part.name} cannot be loaded: ${err.message}.` +
            (err.reason === 'truncated'
              ? ' The download may have been cut short; fetch it again.'
              : ' Choose a .gguf model file.'),
          err.reason,
          { name: part.name },
        );
      }
      throw err;
    }
    if (opts.tensorTypes) checkTensorTypes(header, part.name, opts.allowScalarKernels ?? false);
  }
  if (opts.signal?.aborted) throw new AbortError('model load aborted');
}

/** A model over the engine's size limit (also found before a download, from the announced sizes). */
export function tooLarge(name: string, size: number, maxBytes: number): ModelLoadError {
  return new ModelLoadError(
    `${name} is ${formatBytes(size)}; this engine holds models up to ${formatBytes(maxBytes)} ` +
      '(WebAssembly has a 4 GB heap, shared with the KV cache). Pick a smaller model or quantization (e.g. Q4_K_M).',
    'too_large',
    { size, limit: maxBytes },
  );
}
