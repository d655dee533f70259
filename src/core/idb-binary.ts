// Binary values in IndexedDB: Blobs where the browser stores them (kept on disk, read back faster than typed arrays),
// bytes where it does not — WebKit's ephemeral sessions (private browsing, WebDriver's) answer a Blob put with
// "UnknownError: Error preparing Blob/File data to be stored in object store". Learnt once per database with a probe.
import { promisifyRequest, type UseStore } from 'idb-keyval';

const PROBE = '\u0000blob-probe';
const probes = new WeakMap<UseStore, Promise<boolean>>();

/** Whether this store keeps Blobs. */
export function storesBlobs(store: UseStore): Promise<boolean> {
  let probe = probes.get(store);
  if (!probe) {
    probe = store('readwrite', (s) => {
      s.put(new Blob([new Uint8Array(1)]), PROBE);
      s.delete(PROBE);
      return promisifyRequest(s.transaction);
    }).then(
      () => true,
      () => false,
    );
    probes.set(store, probe);
  }
  return probe;
}

/** `parts` as one value this store keeps. */
export async function binaryValue(store: UseStore, parts: Uint8Array[]): Promise<Blob | Uint8Array> {
  if (await storesBlobs(store)) return new Blob(parts as BlobPart[]);
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.length;
  }
  return bytes;
}
