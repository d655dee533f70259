// Types for simd-check.mjs (plain JS, so the build script can use it in Node without a compiler; the page's
// src/backends/llamacpp/worker/simd.ts imports its probe too).
export function countSimdDots(wasm: Uint8Array): number;
export function countRelaxedDots(wasm: Uint8Array): number;
export const RELAXED_PROBE: Uint8Array<ArrayBuffer>;
