// The model store where a browser has no OPFS sync access (WebKitGTK; older Safari): IndexedDB, in the engine's
// worker. A file is kept as pieces (Blobs, written as the download goes, at least PIECE bytes each but for the last),
// keyed by folder, file and offset; a stored file is those pieces joined into one Blob, which the browser keeps on
// disk and WORKERFS reads in slices. The record of a model is one value, replaced in one transaction. Where the
// browser stores no Blobs in IndexedDB (idb-binary.ts), pieces are bytes, and a loaded model passes through memory.
import { promisifyRequest, type UseStore } from 'idb-keyval';
import { binaryValue } from '../idb-binary.ts';
import { yieldingStore } from '../idb-store.ts';
import { blobFile } from './file.ts';
import type { FileWriter } from './download.ts';
import { localLocks, type StoreBackend } from './store-backend.ts';

/** Bytes a writer gathers before it stores them as a piece: few records for a large file, little held in memory. */
const PIECE = 4 << 20;

const metaKey = (key: string) => `m\u0000${key}`;
const piecePrefix = (key: string, name?: string) => `d\u0000${key}\u0000${name === undefined ? '' : `${name}\u0000`}`;
const pieceKey = (key: string, name: string, offset: number) =>
  piecePrefix(key, name) + String(offset).padStart(16, '0');
/** Every key that starts with `prefix`. */
const under = (prefix: string) => IDBKeyRange.bound(prefix, `${prefix}\uffff`);

/** The IndexedDB store, or null where this context has no IndexedDB. */
export function idbBackend(): StoreBackend | null {
  if (typeof indexedDB === 'undefined') return null;
  let db: UseStore | undefined;
  const store = () => (db ??= yieldingStore('hearth-models', 'files'));
  const storage = globalThis.navigator?.storage;
  const locks = globalThis.navigator?.locks;

  /** A file's pieces in order of offset. */
  const pieces = async (key: string, name: string) => {
    const range = under(piecePrefix(key, name));
    const [keys, values] = await store()('readonly', (s) =>
      Promise.all([promisifyRequest(s.getAllKeys(range)), promisifyRequest(s.getAll(range))]),
    );
    return (keys as string[])
      .map((k, i) => {
        const value = values[i];
        const blob =
          value instanceof Blob
            ? value
            : value instanceof Uint8Array
              ? new Blob([value as Uint8Array<ArrayBuffer>])
              : null;
        return { offset: Number(k.slice(k.lastIndexOf('\u0000') + 1)), blob };
      })
      .filter((p): p is { offset: number; blob: Blob } => p.blob !== null);
  };

  return {
    kind: 'indexeddb',
    async keys() {
      const all = (await store()('readonly', (s) => promisifyRequest(s.getAllKeys(under('m\u0000'))))) as string[];
      return all.map((k) => k.slice(2));
    },
    readMeta: (key) => store()('readonly', (s) => promisifyRequest(s.get(metaKey(key)))).then((m) => m ?? null),
    async recorder(key) {
      return {
        write: (meta) => store()('readwrite', (s) => promisifyRequest(s.put(meta, metaKey(key)))).then(() => {}),
        close: async () => {},
      };
    },
    async writer(key, name) {
      let start = 0;
      let parts: Uint8Array[] = [];
      let length = 0;
      const flush = async () => {
        if (!length) return;
        const gathered = parts;
        const at = start;
        start += length;
        parts = [];
        length = 0;
        const value = await binaryValue(store(), gathered);
        await store()('readwrite', (s) => promisifyRequest(s.put(value, pieceKey(key, name, at))));
      };
      const writer: FileWriter = {
        async write(at, bytes) {
          // Not where the gathered bytes end (another chunk of the download): those become a piece first.
          if (at !== start + length) {
            await flush();
            start = at;
          }
          parts.push(bytes.slice());
          length += bytes.length;
          if (length >= PIECE) await flush();
        },
        async truncate(size) {
          if (size !== 0) throw new Error('the IndexedDB model store only truncates to 0');
          parts = [];
          length = 0;
          start = 0;
          await store()('readwrite', (s) => promisifyRequest(s.delete(under(piecePrefix(key, name)))));
        },
        flush,
        close: flush,
      };
      return writer;
    },
    async files(key, names) {
      const files = await Promise.all(
        names.map(async (name) => {
          // Pieces in order; where a retried chunk wrote over an earlier piece, only the bytes past what is there
          // count.
          const joined: Blob[] = [];
          let end = 0;
          for (const { offset, blob } of await pieces(key, name)) {
            if (offset > end) break; // a gap: the file ends here (its size check fails)
            if (offset + blob.size <= end) continue;
            joined.push(blob.slice(end - offset));
            end = offset + blob.size;
          }
          return { name, blob: new Blob(joined) };
        }),
      );
      return blobFile(files);
    },
    remove: (key) =>
      store()('readwrite', (s) => {
        s.delete(metaKey(key));
        s.delete(under(piecePrefix(key)));
        return promisifyRequest(s.transaction);
      }),
    async space() {
      const { usage, quota } = (await storage?.estimate?.()) ?? {};
      return { used: usage ?? null, quota: quota ?? null };
    },
    persisted: async () => (storage?.persisted ? storage.persisted() : null),
    lock: locks ? (key, fn) => locks.request(`hearth-model:${key}`, fn) : localLocks(),
  };
}
