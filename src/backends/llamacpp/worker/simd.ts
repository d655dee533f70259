// Which wasm build a browser gets. Relaxed SIMD's 8-bit dot product (i32x4.relaxed_dot_i8x16_i7x16_add_s) does in
// one instruction what plain SIMD128 needs four for (widen to 16 bits, then multiply-add), so the relaxed builds run
// the 4- to 8-bit kernels faster. Chromium and Firefox validate it; WebKit (Safari) does not, and gets the plain
// builds. Hearth's kernels keep the 7-bit operand in 0..127, where the instruction is exact on every CPU: both builds
// compute the same integer sums.
import type { CpuBuild, SimdChoice } from '../../../types/options.ts';
// The probe module, the same bytes the build checks its wasm with.
import { RELAXED_PROBE } from '../../../../wasm/simd-check.mjs';

/** Whether this engine validates relaxed SIMD's 8-bit dot product. */
export function hasRelaxedSimd(): boolean {
  try {
    return WebAssembly.validate(RELAXED_PROBE);
  } catch {
    return false;
  }
}

/** The build for these threads and this choice, and why (engine.info().buildReason). `relaxed`: whether this
 * browser validates relaxed SIMD. */
export function chooseBuild(
  threaded: boolean,
  simd: SimdChoice,
  threadsWhy: string,
  relaxed = hasRelaxedSimd(),
): { variant: CpuBuild; reason: string } {
  const base = threaded ? 'mt' : 'st';
  if (simd === 'plain') return { variant: base, reason: `plain SIMD128, as asked (simd: 'plain'); ${threadsWhy}` };
  if (!relaxed) {
    return { variant: base, reason: `plain SIMD128: this browser does not validate relaxed SIMD; ${threadsWhy}` };
  }
  return { variant: `${base}-relaxed`, reason: `relaxed SIMD: this browser validates it; ${threadsWhy}` };
}
