// A model's files as Blobs on the page, for a backend that reads them here rather than in a worker (wllama): from the
// model store (downloaded there first by the worker that keeps it), a File, or a download into memory.
import type { CallControl, LoadRequest, ModelStoreService } from '../../contract.ts';
import { idbBackend } from './idb.ts';
import { storedFiles } from './opfs.ts';
import { isWebSource } from './web-source.ts';
import { openSource, splitFiles } from './source.ts';

/** A model as blobs, in order (a split model's parts). */
export type ModelBlobs = Array<{ name: string; blob: Blob }>;

/** `fetchToStore`: the model store's download (ModelStoreService.modelsFetch), which says where the files are kept. */
export async function pageFiles(
  { source, options }: LoadRequest,
  control: CallControl,
  fetchToStore: ModelStoreService['modelsFetch'],
): Promise<ModelBlobs> {
  if (typeof Blob !== 'undefined' && source instanceof Blob) {
    return [{ name: source instanceof File ? source.name : 'model.gguf', blob: source }];
  }
  if (Array.isArray(source)) return splitFiles(source);
  if (options.store !== false && isWebSource(source)) {
    const { folder, files } = await fetchToStore({ source, options }, control);
    if ('getDirectory' in (globalThis.navigator?.storage ?? {})) return storedFiles(folder, files);
    // The worker's store is IndexedDB (no OPFS here), which this page reads as well.
    const file = await idbBackend()!.files(folder, files);
    return file.parts.map((p) => ({ name: p.name, blob: p.blob! }));
  }
  const file = await openSource(source, { signal: control.signal, onProgress: control.onProgress, store: null });
  return file.parts.map((p) => ({ name: p.name, blob: p.blob! }));
}
