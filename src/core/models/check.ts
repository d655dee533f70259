// The checks a model file passes before any engine reads it: what of it the heap must hold (all of it on the CPU
// engine; on the GPU engine what llama.cpp keeps on the CPU), its GGUF header, every part holding the tensor data its
// header promises, and (for the wasm engine) weight types with a wasm SIMD kernel. Each refusal is a ModelLoadError that
// says what to do.
import { AbortError, ModelLoadError } from '../../errors.ts';
import { checkGgufFile, GgufFormatError, type GgufHeader, tensorBytes } from '../gguf/reader.ts';
import type { ModelFile, ModelPart } from './file.ts';
import { checkTensorTypes } from '../gguf/tensor-types.ts';
import { formatBytes } from '../bytes.ts';
import { NoRange, rangeReader, type WebFile, type WebOptions } from './web-source.ts';

/** What the checks read of a model: its name and size, and each part's bytes (a file here, or one on a server, read by
 * ranges before its download: web-source.ts, rangeReader). */
export type CheckedFile = Pick<ModelFile, 'name' | 'size'> & {
  parts: Array<Pick<ModelPart, 'name' | 'size' | 'read'>>;
};

/** The GPU engine with every layer on the adapter: what the heap's share of a model depends on. */
export interface GpuPlacement {
  /** The adapter's name, for errors. */
  adapter: string;
  /** The adapter's maxStorageBufferBindingSize: llama.cpp's WebGPU backend computes nothing on a larger tensor. */
  bindingLimit: number;
}

/**
 * `maxBytes`: what the heap may hold of the model — the whole file on the CPU engine, or with `gpu` what stays on the
 * CPU (heapShare). `tensorTypes`: also refuse weights without a wasm SIMD kernel (unless allowScalarKernels).
 */
export async function checkModelFile(
  file: CheckedFile,
  maxBytes: number,
  opts: { signal?: AbortSignal; allowScalarKernels?: boolean; tensorTypes: boolean; gpu?: GpuPlacement },
): Promise<void> {
  if (!opts.gpu && file.size > maxBytes) throw tooLarge(file.name, file.size, maxBytes);
  const headers: GgufHeader[] = [];
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
    headers.push(header);
  }
  if (opts.gpu) {
    const share = heapShare(headers, opts.gpu.bindingLimit);
    if (share.bytes > maxBytes) throw tooLargeForGpu(file, share, maxBytes, opts.gpu);
  }
  if (opts.signal?.aborted) throw new AbortError('model load aborted');
}

/**
 * The same checks before a download, on the files on their server: their headers read by ranges (the few MB a
 * vocabulary takes), so that a model the GPU engine's heap cannot hold is refused with nothing downloaded. Skipped where
 * a size is not announced or the server gives no ranges: the checks then run on the downloaded file.
 */
export async function checkBeforeDownload(
  files: WebFile[],
  maxBytes: number,
  opts: WebOptions & { allowScalarKernels?: boolean; gpu?: GpuPlacement },
): Promise<void> {
  if (files.some((f) => f.size === null)) return;
  const parts = files.map((f) => ({ name: f.name, size: f.size!, read: rangeReader(f.url, opts) }));
  const size = parts.reduce((n, p) => n + p.size, 0);
  try {
    await checkModelFile({ name: files[0]!.name, size, parts }, maxBytes, { ...opts, tensorTypes: true });
  } catch (err) {
    if (!(err instanceof NoRange)) throw err;
  }
}

/** The tensors llama.cpp reads on the CPU whatever the layers' device: the input embeddings, looked up row by row. */
const INPUT_TENSOR = /^(token_embd|position_embd|token_types|per_layer_token_embd)\.weight$/;

/**
 * What of a model stays in the heap on the GPU engine: the input embeddings, and every tensor larger than the adapter
 * binds to a shader (the WebGPU backend refuses ops on it, so llama.cpp keeps its weight on the CPU). The rest goes to
 * GPU buffers in 16 MiB chunks (wasm/patches/0023), never whole through the heap.
 */
export function heapShare(
  headers: GgufHeader[],
  bindingLimit: number,
): { bytes: number; embeddings: number; unbindable: string[] } {
  let embeddings = 0;
  let bytes = 0;
  const unbindable: string[] = [];
  for (const t of headers.flatMap((h) => h.tensors)) {
    const size = tensorBytes(t.type, t.dims) ?? 0;
    if (INPUT_TENSOR.test(t.name)) {
      embeddings += size;
      bytes += size;
    } else if (size > bindingLimit) {
      unbindable.push(t.name);
      bytes += size;
    }
  }
  return { bytes, embeddings, unbindable };
}

/** A model whose share of the heap on the GPU engine is over the heap's limit: names the heap's limit and the adapter's. */
function tooLargeForGpu(
  file: CheckedFile,
  share: ReturnType<typeof heapShare>,
  maxBytes: number,
  gpu: GpuPlacement,
): ModelLoadError {
  const unbindable = share.unbindable.length
    ? ` and ${share.unbindable.length} tensor(s) larger than ${gpu.adapter} binds to a shader ` +
      `(maxStorageBufferBindingSize ${formatBytes(gpu.bindingLimit)}: ${share.unbindable.slice(0, 3).join(', ')})`
    : '';
  return new ModelLoadError(
    `${file.name} is ${formatBytes(file.size)}; on the GPU engine the heap would hold ${formatBytes(share.bytes)} of ` +
      `it — the token embeddings (${formatBytes(share.embeddings)})${unbindable} — more than its ` +
      `${formatBytes(maxBytes)}. Pick a smaller quantization (e.g. Q4_K_M) or a GPU with a larger binding limit.`,
    'too_large',
    { size: file.size, limit: maxBytes, heapBytes: share.bytes, bindingLimit: gpu.bindingLimit },
  );
}

/** A model the GPU could not hold (`why`), over what the CPU engine's heap holds. */
export function tooLargeForCpu(name: string, size: number, maxBytes: number, why: string): ModelLoadError {
  return new ModelLoadError(
    `${name} is ${formatBytes(size)}: the GPU could not hold it (${why}), and the CPU engine holds models up to ` +
      `${formatBytes(maxBytes)}. Pick a smaller model or quantization (e.g. Q4_K_M).`,
    'too_large',
    { size, limit: maxBytes, gpu: why },
  );
}

/** A model over the engine's size limit (also found before a download, from the announced sizes). */
export function tooLarge(name: string, size: number, maxBytes: number): ModelLoadError {
  return new ModelLoadError(
    `${name} is ${formatBytes(size)}; this engine holds models up to ${formatBytes(maxBytes)} ` +
      '(a WebAssembly heap, shared with the KV cache: 4 GB, 16 GB with memory64). Pick a smaller model or ' +
      'quantization (e.g. Q4_K_M).',
    'too_large',
    { size, limit: maxBytes },
  );
}
