// Which wasm build a page gets (src/backends/llamacpp/worker/simd.ts): 'auto' takes the relaxed-SIMD build where the
// probe module validates, else the plain one, and says why; 'plain' always the plain one. Which way a browser goes is
// checked in its e2e project (e2e/engine.spec.ts); here both ways, on whatever Node runs the tests.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { chooseBuild, hasRelaxedSimd } from '../../src/backends/llamacpp/worker/simd.ts';
import { RELAXED_PROBE } from '../../wasm/simd-check.mjs';

/** WebAssembly.validate of the probe in a fresh Node with these V8 flags. */
function validatesIn(flags: string[]): boolean {
  const script = `console.log(WebAssembly.validate(new Uint8Array(${JSON.stringify([...RELAXED_PROBE])})))`;
  return execFileSync(process.execPath, [...flags, '-e', script], { encoding: 'utf8' }).trim() === 'true';
}

// Node 20's V8 has relaxed SIMD behind a flag; later ones have it on.
const flagNeeded = Number(process.versions.node.split('.')[0]) <= 20;

describe('the wasm build a page gets', () => {
  it('is relaxed where relaxed SIMD validates, plain where it does not or when asked, and says why', () => {
    expect(chooseBuild(true, 'auto', '2 threads', false)).toEqual({
      variant: 'mt',
      reason: 'plain SIMD128: this browser does not validate relaxed SIMD; 2 threads',
    });
    expect(chooseBuild(false, 'auto', '1 thread', true)).toEqual({
      variant: 'st-relaxed',
      reason: 'relaxed SIMD: this browser validates it; 1 thread',
    });
    expect(chooseBuild(true, 'auto', '2 threads', true).variant).toBe('mt-relaxed');
    expect(chooseBuild(false, 'plain', '1 thread', true)).toEqual({
      variant: 'st',
      reason: "plain SIMD128, as asked (simd: 'plain'); 1 thread",
    });
  });

  it('probes with a module that validates where relaxed SIMD is on, and asks this engine the same', () => {
    expect(validatesIn(flagNeeded ? ['--experimental-wasm-relaxed-simd'] : [])).toBe(true);
    if (flagNeeded) expect(validatesIn([])).toBe(false);
    // This process runs with Node's defaults: the answer the page-side check gives is the probe's.
    expect(hasRelaxedSimd()).toBe(validatesIn([]));
  });
});
