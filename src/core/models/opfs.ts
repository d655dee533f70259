// The model store in the browser: the Origin Private File System, written through sync access handles (the engine
// runs in a dedicated worker, the only place they exist; a write there is a plain memory copy to disk). One folder
// per model under hearth-models/; its record is kept in two files written in turn, so a tab closed mid-write leaves
// the previous record whole.
import { blobFile } from './file.ts';
import type { FileWriter } from './download.ts';
import { localLocks, type StoreBackend, type StoreMeta, validMeta } from './store-backend.ts';

const ROOT = 'hearth-models';
const META = ['meta-0.json', 'meta-1.json'];

interface SyncHandle {
  write(buffer: ArrayBufferView, options?: { at?: number }): number;
  truncate(size: number): void;
  flush(): void;
  close(): void;
}
type SyncFileHandle = FileSystemFileHandle & { createSyncAccessHandle(): Promise<SyncHandle> };

/** The OPFS store, or null where this context has no OPFS sync access (not a dedicated worker, an old browser). */
export function opfsBackend(): StoreBackend | null {
  const storage = globalThis.navigator?.storage;
  if (
    !storage?.getDirectory ||
    typeof FileSystemFileHandle === 'undefined' ||
    !('createSyncAccessHandle' in FileSystemFileHandle.prototype)
  ) {
    return null;
  }
  const root = async () => (await storage.getDirectory()).getDirectoryHandle(ROOT, { create: true });
  const folder = async (key: string, create = false) => (await root()).getDirectoryHandle(key, { create });
  const seqs = new Map<string, number>();
  const locks = globalThis.navigator.locks;

  const readSlot = async (dir: FileSystemDirectoryHandle, name: string) => {
    try {
      return JSON.parse(await (await (await dir.getFileHandle(name)).getFile()).text()) as {
        seq: number;
        meta: StoreMeta;
      };
    } catch {
      return null; // missing, or cut short by a closed tab
    }
  };

  return {
    kind: 'opfs',
    async keys() {
      const keys: string[] = [];
      for await (const [name, handle] of (await root()) as unknown as AsyncIterable<[string, FileSystemHandle]>) {
        if (handle.kind === 'directory') keys.push(name);
      }
      return keys;
    },
    async readMeta(key) {
      let dir: FileSystemDirectoryHandle;
      try {
        dir = await folder(key);
      } catch {
        return null;
      }
      const slots = (await Promise.all(META.map((name) => readSlot(dir, name)))).filter(
        (s) => s && Number.isSafeInteger(s.seq) && validMeta(s.meta),
      );
      const latest = slots.sort((a, b) => b!.seq - a!.seq)[0];
      if (!latest) return null;
      seqs.set(key, latest.seq);
      return latest.meta;
    },
    async recorder(key) {
      const dir = await folder(key, true);
      const slots: SyncHandle[] = [];
      try {
        for (const name of META) {
          slots.push(
            await ((await dir.getFileHandle(name, { create: true })) as SyncFileHandle).createSyncAccessHandle(),
          );
        }
      } catch (err) {
        slots.forEach((h) => h.close());
        throw err;
      }
      return {
        async write(meta) {
          const seq = (seqs.get(key) ?? 0) + 1;
          const handle = slots[seq % 2]!;
          const bytes = new TextEncoder().encode(JSON.stringify({ seq, meta }));
          handle.truncate(0);
          handle.write(bytes, { at: 0 });
          handle.flush();
          seqs.set(key, seq);
        },
        async close() {
          slots.forEach((h) => h.close());
        },
      };
    },
    async writer(key, name) {
      const file = (await (await folder(key, true)).getFileHandle(name, { create: true })) as SyncFileHandle;
      return syncWriter(await file.createSyncAccessHandle());
    },
    files: async (key, names) => blobFile(await storedFiles(key, names)),
    async remove(key) {
      seqs.delete(key);
      await (await root()).removeEntry(key, { recursive: true }).catch((err: DOMException) => {
        if (err.name !== 'NotFoundError') throw err;
      });
    },
    async space() {
      const { usage, quota } = await storage.estimate();
      return { used: usage ?? null, quota: quota ?? null };
    },
    async persisted() {
      return storage.persisted ? storage.persisted() : null;
    },
    lock: locks ? (key, fn) => locks.request(`hearth-model:${key}`, fn) : localLocks(),
  };
}

/** A stored model's files, as Files and their handles; works on the page too (reading OPFS needs no sync access
 * handle). */
export async function storedFiles(
  key: string,
  names: string[],
): Promise<Array<{ name: string; blob: File; opfs: FileSystemFileHandle }>> {
  const dir = await (await (await navigator.storage.getDirectory()).getDirectoryHandle(ROOT)).getDirectoryHandle(key);
  return Promise.all(
    names.map(async (name) => {
      const opfs = await dir.getFileHandle(name);
      return { name, blob: await opfs.getFile(), opfs };
    }),
  );
}

function syncWriter(handle: SyncHandle): FileWriter {
  return {
    async write(at, bytes) {
      // At the quota, Chromium writes less than given (others throw QuotaExceededError).
      if (handle.write(bytes, { at }) !== bytes.length) {
        throw new DOMException('the storage quota is reached', 'QuotaExceededError');
      }
    },
    async truncate(size) {
      handle.truncate(size);
    },
    async flush() {
      handle.flush();
    },
    async close() {
      handle.close();
    },
  };
}
