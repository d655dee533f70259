// The model store in Node: a folder per model under `root`, records written to a temporary file and renamed over
// the old one (one step); and model files on disk for llama.cpp. Only src/node.ts imports this (node: modules never
// reach the browser bundle).
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ModelLoadError } from '../../errors.ts';
import { type ModelFile, type ModelPart, unmountDir } from './file.ts';
import type { FileWriter } from './download.ts';
import { localLocks, type StoreBackend } from './store-backend.ts';

export function folderBackend(root: string): StoreBackend {
  const folder = (key: string) => join(root, key);
  return {
    kind: 'folder',
    async keys() {
      try {
        return (await readdir(root, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
      } catch {
        return [];
      }
    },
    async readMeta(key) {
      try {
        return JSON.parse(await readFile(join(folder(key), 'meta.json'), 'utf8')) as unknown;
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
      const fh = await open(join(folder(key), name), 'a+')
        .then((h) => h.close())
        .then(() => open(join(folder(key), name), 'r+'));
      const writer: FileWriter = {
        async write(at, bytes) {
          let written = 0;
          while (written < bytes.length) {
            written += (await fh.write(bytes, written, bytes.length - written, at + written)).bytesWritten;
          }
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
  const parts = await Promise.all(
    names.map(async (name): Promise<ModelPart> => {
      const path = join(dir, name);
      let info: { size: number; mtimeMs: number };
      try {
        info = await stat(path);
      } catch {
        throw new ModelLoadError(`no model file at ${path}`, 'not_found', { path });
      }
      const { size } = info;
      return {
        name,
        size,
        read: (offset, length) => readAt(path, offset, Math.min(length, Math.max(0, size - offset))),
        sha256: () => fileSha256(path, `${path}:${size}:${info.mtimeMs}`),
      };
    }),
  );
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

/** Files hashed in this process, by path, size and modification time: tests and benchmarks load one file many times. */
const hashes = new Map<string, Promise<string>>();

/** A file's sha256 with Node's own crypto (about 4× hash-wasm's speed). */
function fileSha256(path: string, key: string): Promise<string> {
  let hash = hashes.get(key);
  if (!hash) {
    hash = new Promise<string>((resolve, reject) => {
      const h = createHash('sha256');
      createReadStream(path)
        .on('data', (b) => h.update(b))
        .on('end', () => resolve(h.digest('hex')))
        .on('error', reject);
    });
    hashes.set(key, hash);
    hash.catch(() => hashes.delete(key));
  }
  return hash;
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
