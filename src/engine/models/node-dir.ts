// The model store in Node: a folder per model under `root`, records written to a temporary file and renamed over
// the old one (one step); and model files on disk for llama.cpp. Only src/node.ts imports this (node: modules never
// reach the browser bundle).
import { mkdir, open, readdir, readFile, rename, rm, stat, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ModelLoadError } from '../../errors.ts';
import { type ModelFile, type ModelPart, unmountDir } from '../source.ts';
import type { FileWriter } from './download.ts';
import { localLocks, type StoreBackend, type StoreMeta } from './store.ts';

export function folderBackend(root: string): StoreBackend {
  const folder = (key: string) => join(root, key);
  return {
    async keys() {
      try {
        return (await readdir(root, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
      } catch {
        return [];
      }
    },
    async readMeta(key) {
      try {
        const meta = JSON.parse(await readFile(join(folder(key), 'meta.json'), 'utf8')) as StoreMeta;
        return meta.version === 1 ? meta : null;
      } catch {
        return null;
      }
    },
    async recorder(key) {
      await mkdir(folder(key), { recursive: true });
      const tmp = join(folder(key), 'meta.json.tmp');
      return {
        async write(meta) {
          await writeFile(tmp, JSON.stringify(meta));
          await rename(tmp, join(folder(key), 'meta.json'));
        },
        close: async () => {},
      };
    },
    async writer(key, name) {
      await mkdir(folder(key), { recursive: true });
      const fh = await open(join(folder(key), name), 'a+').then((h) => h.close()).then(() => open(join(folder(key), name), 'r+'));
      const writer: FileWriter = {
        async write(at, bytes) {
          let written = 0;
          while (written < bytes.length) written += (await fh.write(bytes, written, bytes.length - written, at + written)).bytesWritten;
        },
        truncate: (size) => fh.truncate(size),
        flush: () => fh.datasync(),
        close: () => fh.close(),
      };
      return writer;
    },
    files: (key, names) => diskFiles(folder(key), names),
    remove: (key) => rm(folder(key), { recursive: true, force: true }),
    async space() {
      await mkdir(root, { recursive: true });
      const s = await statfs(root);
      return { used: (s.blocks - s.bavail) * s.bsize, quota: s.blocks * s.bsize };
    },
    persisted: async () => true,
    lock: localLocks(),
  };
}

let mounts = 0;

/** Files in one folder, mounted into the wasm filesystem with NODEFS (read in chunks, never copied whole). */
export async function diskFiles(dir: string, names: string[]): Promise<ModelFile> {
  const parts = await Promise.all(names.map(async (name): Promise<ModelPart> => {
    const path = join(dir, name);
    let size: number;
    try {
      size = (await stat(path)).size;
    } catch {
      throw new ModelLoadError(`no model file at ${path}`, 'not_found', { path });
    }
    return { name, size, read: (offset, length) => readAt(path, offset, Math.min(length, Math.max(0, size - offset))) };
  }));
  return {
    name: names[0]!,
    size: parts.reduce((n, p) => n + p.size, 0),
    parts,
    async mount(mod) {
      const at = `/hearth-node-${++mounts}`;
      mod.FS.mkdir(at);
      mod.FS.mount(mod.NODEFS, { root: dir }, at);
      return { path: `${at}/${names[0]}`, unmount: () => unmountDir(mod, at) };
    },
  };
}

async function readAt(path: string, offset: number, length: number): Promise<Uint8Array> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(length);
    const { bytesRead } = await fh.read(buf, 0, length, offset);
    return new Uint8Array(buf.buffer, buf.byteOffset, bytesRead);
  } finally {
    await fh.close();
  }
}
