// Hearth in Node: the same Engine as in the browser worker, over the same wasm, reading models from disk.
// Used by the unit tests and benchmarks; also usable on its own (`import { createNodeEngine } from 'hearth/node'`).
import { open, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Engine, type EngineConfig } from './engine/engine.ts';
import { nodeModuleLoader } from './engine/llama/node.ts';
import type { BuildVariant } from './engine/llama/module.ts';
import { unmountDir, type ModelFile } from './engine/source.ts';
import { ModelLoadError } from './errors.ts';

export const defaultWasmDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'public', 'hearth');

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

export interface NodeEngineOptions extends Partial<Omit<EngineConfig, 'loader'>> {
  wasmDir?: string;
  variant?: BuildVariant;
  threads?: number;
}

export async function createNodeEngine(opts: NodeEngineOptions = {}): Promise<Engine> {
  const loader = nodeModuleLoader({ dir: opts.wasmDir ?? defaultWasmDir, variant: opts.variant, threads: opts.threads });
  const engine = new Engine({ ...opts, loader, openPath: opts.openPath ?? openPath });
  await engine.init();
  return engine;
}
