// When a page's engine moves to the memory64 build (backends/llamacpp/worker/memory64.ts): only for a CPU engine's
// refusal of a model too large for wasm32's heap that 16 GiB holds, only where the browser has memory64, the page is
// isolated (the build is threaded) and the files are there; else the refusal says which of these is missing. The move
// itself, with the real build and a 4.32 GiB model, runs in e2e/large.spec.ts (npm run test:large).
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { assetsIn } from '../../src/core/assets.ts';
import { DEFAULT_MAX_MODEL_BYTES, MEMORY64_MAX_MODEL_BYTES } from '../../src/core/limits.ts';
import { tooLarge, tooLargeForCpu } from '../../src/core/models/check.ts';
import { EngineError, ModelLoadError } from '../../src/errors.ts';
import {
  fitsMemory64,
  hasMemory64,
  memory64Init,
  withoutMemory64,
} from '../../src/backends/llamacpp/worker/memory64.ts';
import type { HostInit } from '../../src/backends/llamacpp/worker/protocol.ts';
import { LastingWorker, type OneWorker } from '../../src/backends/llamacpp/worker/restart.ts';
import { rpcStubs } from '../../src/core/rpc/rpc.ts';
import type { ServedCalls } from '../../src/contract.ts';

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

  // The page's side of the move (restart.ts) with stand-in workers: the worker boundary, which the real build crosses
  // in e2e/large.spec.ts.
  describe('the move, with stand-in workers (fake: no wasm)', () => {
    const big = { source: 'https://site.test/8b.gguf', options: {} };
    /** A worker whose engine holds models up to `limit` bytes; records what it was asked. */
    function standIn(name: string, limit: number, log: string[]): OneWorker {
      const worker: OneWorker = {
        started: null,
        onLost: null,
        terminate: () => log.push(`${name} terminated`),
        calls: rpcStubs<ServedCalls>(async (method) => {
          log.push(`${name} ${method}`);
          if (method === 'load' && 4.9 * GiB > limit) throw tooLarge('8b.gguf', 4.9 * GiB, limit);
          return name;
        }),
      };
      return worker;
    }

    it('loads a model wasm32 refuses on a memory64 worker, which then serves every call and restarts as memory64', async () => {
      const log: string[] = [];
      const wide: OneWorker[] = [];
      const lasting = new LastingWorker(
        standIn('wasm32', DEFAULT_MAX_MODEL_BYTES, log),
        async () => standIn('wasm32 again', DEFAULT_MAX_MODEL_BYTES, log),
        async () => wide[wide.push(standIn(`memory64#${wide.length + 1}`, MEMORY64_MAX_MODEL_BYTES, log)) - 1]!,
      );
      expect(await lasting.calls.load(big as never, {})).toBe('memory64#1');
      expect(await lasting.calls.info()).toBe('memory64#1');
      expect(log).toEqual(['wasm32 load', 'memory64#1 load', 'wasm32 terminated', 'memory64#1 info']);
      // The memory64 worker lost: its replacement is a memory64 worker too, which loads the model again by itself.
      wide[0]!.onLost!(new EngineError('the engine worker stopped', 'worker_lost'));
      expect(await lasting.calls.info()).toBe('memory64#2');
      expect(log.slice(4)).toEqual(['memory64#2 load', 'memory64#2 info']);
    });

    it('gives the refusal with the reason where no memory64 worker can run or start, and keeps the wasm32 worker', async () => {
      const log: string[] = [];
      const none = new LastingWorker(
        standIn('wasm32', DEFAULT_MAX_MODEL_BYTES, log),
        async () => {
          throw new Error('unused');
        },
        'this browser has no 64-bit WebAssembly memory',
      );
      await expect(none.calls.load(big as never, {})).rejects.toMatchObject({
        code: 'too_large',
        details: { memory64: 'this browser has no 64-bit WebAssembly memory' },
      });
      const failing = new LastingWorker(
        standIn('wasm32', DEFAULT_MAX_MODEL_BYTES, log),
        async () => {
          throw new Error('unused');
        },
        async () => {
          throw new Error('hearth-mt64.wasm: 404');
        },
      );
      await expect(failing.calls.load(big as never, {})).rejects.toThrow(
        /cannot run here: the memory64 build could not start \(hearth-mt64\.wasm: 404\)/,
      );
      expect(await failing.calls.info()).toBe('wasm32');
      expect(log).not.toContain('wasm32 terminated');
    });
  });
});
