// The model's files as Blobs on the page, for wllama (which reads them here, not in the engine's worker): from the
// model store the wasm engine keeps (downloaded there first), a File, or a download into memory.
import type { CallControl, EngineCore, LoadRequest } from '../../contract.ts';
import { idbBackend } from './idb.ts';
import { storedFiles } from './opfs.ts';
import { isRemoteSource } from './remote.ts';
import { openSource } from './source.ts';

/** A model as blobs, in order (a split model's parts). */
export type ModelBlobs = Array<{ name: string; blob: Blob }>;

export async function modelBlobs(home: EngineCore, { source, options }: LoadRequest, control: CallControl): Promise<ModelBlobs> {
  if (typeof Blob !== 'undefined' && source instanceof Blob) return [{ name: source instanceof File ? source.name : 'model.gguf', blob: source }];
  if (options.store !== false && isRemoteSource(source)) {
    const { folder, files } = await home.modelsFetch({ source, options }, control);
    if ('getDirectory' in (globalThis.navigator?.storage ?? {})) return storedFiles(folder, files);
    // The worker's store is IndexedDB (no OPFS here), which this page reads as well.
    const file = await idbBackend()!.files(folder, files);
    return file.parts.map((p) => ({ name: p.name, blob: p.blob! }));
  }
  const file = await openSource(source, { signal: control.signal, onProgress: control.onProgress, store: null });
  return file.parts.map((p) => ({ name: p.name, blob: p.blob! }));
}
