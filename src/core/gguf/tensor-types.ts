// Which weight types this build runs at speed. Every ggml type that the pinned llama.cpp knows can be computed, but
// only some have WebAssembly SIMD dot products (ggml-cpu/arch/wasm/quants.c and wasm/patches); the rest fall back to
// ggml's scalar C, several times slower. A model that needs them is refused before its weights are read, unless the
// caller accepts the speed (LoadOptions.allowScalarKernels).
import { ModelLoadError } from '../../errors.ts';
import type { GgufHeader } from './reader.ts';

/** ggml_type names by id, as in the pinned ggml.h (ids 4, 5 and 31–38 were removed from the format). */
const NAMES: Record<number, string> = {
  0: 'F32',
  1: 'F16',
  2: 'Q4_0',
  3: 'Q4_1',
  6: 'Q5_0',
  7: 'Q5_1',
  8: 'Q8_0',
  9: 'Q8_1',
  10: 'Q2_K',
  11: 'Q3_K',
  12: 'Q4_K',
  13: 'Q5_K',
  14: 'Q6_K',
  15: 'Q8_K',
  16: 'IQ2_XXS',
  17: 'IQ2_XS',
  18: 'IQ3_XXS',
  19: 'IQ1_S',
  20: 'IQ4_NL',
  21: 'IQ3_S',
  22: 'IQ2_S',
  23: 'IQ4_XS',
  24: 'I8',
  25: 'I16',
  26: 'I32',
  27: 'I64',
  28: 'F64',
  29: 'IQ1_M',
  30: 'BF16',
  34: 'TQ1_0',
  35: 'TQ2_0',
  39: 'MXFP4',
  40: 'NVFP4',
  41: 'Q1_0',
  42: 'Q2_0',
};

/** Types whose matrix products have WebAssembly SIMD code in this build. */
const FAST = new Set([
  'F32',
  'F16',
  'Q4_0',
  'Q4_1',
  'Q5_0',
  'Q5_1',
  'Q8_0',
  'Q2_K',
  'Q3_K',
  'Q4_K',
  'Q5_K',
  'Q6_K',
  'IQ4_NL',
  'IQ4_XS',
]);

const PICK = 'Pick a Q4_K_M, Q4_0, Q5_K_M, Q6_K, IQ4_XS or Q8_0 file of the model';

const tensorTypeName = (id: number): string => NAMES[id] ?? `type ${id}`;

/**
 * Refuses a model whose weights use a type this build cannot compute, or (unless allowScalar) one it computes
 * only with scalar code. Only matrices count: vectors (norms, biases) are tiny, and the token embeddings are read
 * one row per token unless the model has no separate output matrix, which then reuses them for every token.
 */
export function checkTensorTypes(header: GgufHeader, name: string, allowScalar: boolean): void {
  const tied = !header.tensors.some((t) => t.name === 'output.weight');
  const counted = header.tensors.filter((t) => t.dims.length >= 2 && (tied || t.name !== 'token_embd.weight'));
  const unknown = counted.find((t) => !(t.type in NAMES));
  if (unknown) {
    throw new ModelLoadError(
      `${name} stores ${unknown.name} as ggml type ${unknown.type}, which this build of ` +
        `llama.cpp does not know. ${PICK}.`,
      'unsupported_quantization',
      { tensor: unknown.name, type: unknown.type },
    );
  }
  if (allowScalar) return;
  const slow = [...new Set(counted.map((t) => tensorTypeName(t.type)).filter((t) => !FAST.has(t)))];
  if (slow.length) {
    throw new ModelLoadError(
      `${name} has ${slow.join(', ')} weights, which have no WebAssembly SIMD kernel here and ` +
        `would run several times slower. ${PICK}, or load with allowScalarKernels: true to accept the speed.`,
      'unsupported_quantization',
      { types: slow },
    );
  }
}
