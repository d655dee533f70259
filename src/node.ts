// Hearth in Node: the same engine as in the browser worker, over the same wasm, reading models from disk, behind the
// same public API (`import { createNodeEngine } from 'hearth/node'`). The unit tests and benchmarks use it too.
import { readFileSync } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EngineApi } from './api/engine-api.ts';
import { Engine, type EngineConfig } from './engine/engine.ts';
import type { ModuleFactory, ModuleLoader } from './engine/llama/module.ts';
import { unmountDir, type ModelFile } from './engine/source.ts';
import { ModelLoadError } from './errors.ts';
import type { BuildVariant } from './types.ts';

export const defaultWasmDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'public', 'hearth');

/** Loads the wasm build in Node (the browser's loader is worker/load-module.ts). */
export function nodeModuleLoader(opts: { dir?: string; variant?: BuildVariant; threads?: number } = {}): ModuleLoader {
  const dir = opts.dir ?? defaultWasmDir;
  const variant = opts.variant ?? 'st';
  const threads = variant === 'st' ? 1 : Math.max(1, opts.threads ?? 1);
  const require = createRequire(import.meta.url);
  return {
    variant,
    threads,
    async load() {
      const factory = require(join(dir, `hearth-${variant}.js`)) as ModuleFactory;
      // Handing over the bytes keeps emscripten 3.1.6 from fetch()ing a file path, which Node's fetch rejects.
      const wasmBinary = readFileSync(join(dir, `hearth-${variant}.wasm`));
      return factory({ wasmBinary, hearthPoolSize: Math.max(1, threads - 1), print: () => {}, printErr: () => {} });
    },
  };
}

let mounts = 0;

/** A model file on disk, mounted into the wasm filesystem with NODEFS (read in chunks, never copied whole). */
export async function openPath(path: string): Promise<ModelFile> {
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch {
    throw new ModelLoadError(`no model file at ${path}`, 'not_found', { path });
  }
  return {
    name: basename(path),
    size,
    async read(offset, length) {
      const fh = await open(path, 'r');
      try {
        const buf = Buffer.alloc(Math.min(length, Math.max(0, size - offset)));
        const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
        return new Uint8Array(buf.buffer, buf.byteOffset, bytesRead);
      } finally {
        await fh.close();
      }
    },
    mount(mod) {
      const dir = `/hearth-node-${++mounts}`;
      mod.FS.mkdir(dir);
      mod.FS.mount(mod.NODEFS, { root: dirname(path) }, dir);
      return { path: `${dir}/${basename(path)}`, unmount: () => unmountDir(mod, dir) };
    },
  };
}

/** The public API over an engine in this process; `core` is the engine itself (seams for tests and benchmarks). */
export class NodeEngine extends EngineApi {
  constructor(override readonly core: Engine) {
    super(core);
  }
}

export interface NodeEngineOptions extends Partial<Omit<EngineConfig, 'loader'>> {
  wasmDir?: string;
  variant?: BuildVariant;
  threads?: number;
}

export async function createNodeEngine(opts: NodeEngineOptions = {}): Promise<NodeEngine> {
  const loader = nodeModuleLoader({ dir: opts.wasmDir, variant: opts.variant, threads: opts.threads });
  const engine = new Engine({ ...opts, loader, openPath: opts.openPath ?? openPath });
  await engine.init();
  return new NodeEngine(engine);
}
