// Which wasm build a page gets (src/backends/llamacpp/worker/simd.ts). Node 20 has relaxed SIMD off, like WebKit: the probe
// fails, and 'auto' picks the plain builds; with V8's flag on, the same probe passes. (Chromium and Firefox picking
// the relaxed builds is checked in their e2e projects: e2e/engine.spec.ts.)
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { chooseBuild, hasRelaxedSimd } from '../src/backends/llamacpp/worker/simd.ts';
import { RELAXED_PROBE } from '../wasm/simd-check.mjs';

// Node 20's V8 has relaxed SIMD behind a flag; later ones have it on.
const relaxedOff = Number(process.versions.node.split('.')[0]) <= 20;

describe('the wasm build a page gets', () => {
  it.runIf(relaxedOff)('is plain where relaxed SIMD does not validate, and says why', () => {
    expect(hasRelaxedSimd()).toBe(false);
    expect(chooseBuild(true, 'auto', '2 threads')).toEqual({
      variant: 'mt', reason: 'plain SIMD128: this browser does not validate relaxed SIMD; 2 threads',
    });
    expect(chooseBuild(false, 'plain', '1 thread')).toEqual({ variant: 'st', reason: 'plain SIMD128, as asked (simd: \'plain\'); 1 thread' });
  });

  it.runIf(relaxedOff)('probes with a module that validates once relaxed SIMD is on', () => {
    const script = `console.log(WebAssembly.validate(new Uint8Array(${JSON.stringify([...RELAXED_PROBE])})))`;
    expect(execFileSync(process.execPath, ['--experimental-wasm-relaxed-simd', '-e', script], { encoding: 'utf8' }).trim()).toBe('true');
    expect(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }).trim()).toBe('false');
  });
});
