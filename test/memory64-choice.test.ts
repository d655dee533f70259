// When a page's engine moves to the memory64 build (backends/llamacpp/worker/memory64.ts): only for a CPU engine's
// refusal of a model too large for wasm32's heap that 16 GiB holds, only where the browser has memory64, the page is
// isolated (the build is threaded) and the files are there; else the refusal says which of these is missing. The move
// itself, with the real build and a 4.32 GiB model, runs in e2e/large.spec.ts (npm run test:large).
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { assetsIn } from '../src/core/assets.ts';
import { DEFAULT_MAX_MODEL_BYTES, MEMORY64_MAX_MODEL_BYTES } from '../src/core/limits.ts';
import { tooLarge, tooLargeForCpu } from '../src/core/models/check.ts';
import { ModelLoadError } from '../src/errors.ts';
import { fitsMemory64, hasMemory64, memory64Init, withoutMemory64 } from '../src/backends/llamacpp/worker/memory64.ts';
import type { HostInit } from '../src/backends/llamacpp/worker/protocol.ts';

const init = (over: Partial<HostInit> = {}): HostInit => ({
  variant: 'mt-relaxed',
  buildReason: 'relaxed SIMD',
  threads: 4,
  assets: assetsIn('https://site.test/hearth/'),
  ...over,
});
const GiB = 1024 ** 3;

describe('the memory64 build', () => {
  it('takes over a threaded CPU engine where the browser has memory64 and the files are there, and says why', () => {
    const wide = memory64Init(init(), true);
    expect(wide).toMatchObject({ variant: 'mt64', threads: 4 });
    expect((wide as HostInit).buildReason).toMatch(/larger than the mt-relaxed build's 4 GiB heap/);
  });

  it('says what is missing where it cannot run, and does not apply to the GPU engine or a limit the page set', () => {
    expect(memory64Init(init(), false)).toMatch(/no 64-bit WebAssembly memory/);
    expect(memory64Init(init({ variant: 'st', threads: 1 }), true)).toMatch(/cross-origin isolated/);
    const { 'hearth-mt64.wasm': _, ...packaged } = init().assets;
    expect(memory64Init(init({ assets: packaged }), true)).toMatch(/not among the engine's files/);
    expect(memory64Init(init({ variant: 'webgpu' }), true)).toBeNull();
    expect(memory64Init(init({ maxModelBytes: 2 * GiB }), true)).toBeNull();
  });

  it("moves only for the CPU engine's size refusal of a model 16 GiB holds", () => {
    expect(fitsMemory64(tooLarge('8b.gguf', 4.9 * GiB, DEFAULT_MAX_MODEL_BYTES))).toBe(true);
    expect(fitsMemory64(tooLarge('70b.gguf', MEMORY64_MAX_MODEL_BYTES + 1, DEFAULT_MAX_MODEL_BYTES))).toBe(false);
    expect(fitsMemory64(tooLargeForCpu('8b.gguf', 4.9 * GiB, DEFAULT_MAX_MODEL_BYTES, 'no GPU memory'))).toBe(false);
    // The GPU engine's refusal (check.ts, tooLargeForGpu): the heap's share of the model is over its limit.
    const gpuShare = { size: 4.9 * GiB, limit: DEFAULT_MAX_MODEL_BYTES, heapBytes: 4 * GiB, bindingLimit: 2 ** 27 };
    expect(fitsMemory64(new ModelLoadError('8b.gguf is 4.9 GiB; on the GPU engine…', 'too_large', gpuShare))).toBe(
      false,
    );
    expect(fitsMemory64(new Error('too_large'))).toBe(false);
  });

  it('turns a refusal into one that says why memory64 did not take it', () => {
    const err = withoutMemory64(tooLarge('8b.gguf', 4.9 * GiB, DEFAULT_MAX_MODEL_BYTES), 'no memory64 here');
    expect(err).toMatchObject({ name: 'ModelLoadError', code: 'too_large', details: { memory64: 'no memory64 here' } });
    expect(err.message).toMatch(
      /holds models up to 3\.50 GiB.*The memory64 build would hold it, but it cannot run here: no memory64 here\.$/,
    );
  });

  it('probes with a module that validates where memory64 is on, and asks this engine the same', () => {
    const script = (flags: string[]) =>
      execFileSync(
        process.execPath,
        [
          ...flags,
          '--input-type=module',
          '-e',
          "import { hasMemory64 } from './src/backends/llamacpp/worker/memory64.ts'; console.log(hasMemory64())",
        ],
        { encoding: 'utf8' },
      ).trim();
    // Node 20's V8 has memory64 behind a flag; Node 24 and later have it on.
    const flagNeeded = Number(process.versions.node.split('.')[0]) < 24;
    expect(hasMemory64()).toBe(!flagNeeded);
    if (flagNeeded) expect(script(['--import', 'tsx', '--experimental-wasm-memory64'])).toBe('true');
  });
});
