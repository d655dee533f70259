// Which wasm build a browser gets. Relaxed SIMD's 8-bit dot product (i32x4.relaxed_dot_i8x16_i7x16_add_s) does in
// one instruction what plain SIMD128 needs four for (widen to 16 bits, then multiply-add), so the relaxed builds run
// the 4- to 8-bit kernels faster. Chromium and Firefox validate it; WebKit (Safari) does not, and gets the plain
// builds. Hearth's kernels keep the 7-bit operand in 0..127, where the instruction is exact on every CPU: both builds
// compute the same integer sums.
import type { BuildVariant, SimdChoice } from '../../types/options.ts';

// A module with one function that returns the relaxed dot product of three zero vectors (the build's own check,
// wasm/simd-check.mjs, holds the same bytes; test/simd.test.ts compares them).
const v128Zero = [0xfd, 0x0c, ...new Array<number>(16).fill(0)];
const body = [0x00, ...v128Zero, ...v128Zero, ...v128Zero, 0xfd, 0x93, 0x02, 0x0b];
export const PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // types: () -> v128
  0x03, 0x02, 0x01, 0x00, // one function of that type
  0x0a, body.length + 2, 0x01, body.length, ...body, // its code
]);

/** Whether this engine validates relaxed SIMD's 8-bit dot product. */
export function hasRelaxedSimd(): boolean {
  try {
    return WebAssembly.validate(PROBE);
  } catch {
    return false;
  }
}

/** The build for these threads and this choice, and why (engine.info().buildReason). */
export function chooseBuild(threaded: boolean, simd: SimdChoice, threadsWhy: string): { variant: BuildVariant; reason: string } {
  const base = threaded ? 'mt' : 'st';
  if (simd === 'plain') return { variant: base, reason: `plain SIMD128, as asked (simd: 'plain'); ${threadsWhy}` };
  if (!hasRelaxedSimd()) return { variant: base, reason: `plain SIMD128: this browser does not validate relaxed SIMD; ${threadsWhy}` };
  return { variant: `${base}-relaxed`, reason: `relaxed SIMD: this browser validates it; ${threadsWhy}` };
}
