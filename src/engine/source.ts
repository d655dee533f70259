// Turns a model source (URL, Hugging Face file, Blob/File, Node path) into a ModelFile the engine can check and
// mount. URL and { hf } sources go through the model store (models/store.ts) when the engine has one; without it
// (LoadOptions.store false) they are downloaded into memory, with progress in bytes, until the signal aborts.
import { AbortError, ModelLoadError } from '../errors.ts';
import type { ModelSource, Progress } from '../types.ts';
import type { HearthModule } from './llama/module.ts';
import type { ModelStore } from './models/store.ts';
import { fetchOk, remoteModel, type RemoteOptions } from './models/remote.ts';

/** One file of a model: a whole model, or one part of a split one. */
export interface ModelPart {
  name: string;
  size: number;
  read(offset: number, length: number): Promise<Uint8Array>;
  /** The file itself, where it is a Blob (a browser). */
  blob?: Blob;
}

export interface ModelFile {
  /** The (first) file's name. */
  name: string;
  /** Bytes of all parts. */
  size: number;
  /** The files in order: one, or the parts of a split model (name-0000i-of-0000N.gguf). */
  parts: ModelPart[];
  /** Makes the files visible to llama.cpp; returns the first one's path there and how to undo it. */
  mount(mod: HearthModule): { path: string; unmount(): void };
}

export interface SourceOptions extends RemoteOptions {
  onProgress?: (p: Progress) => void;
  /** Opens { path } sources; only Node provides it. */
  openPath?: (path: string) => Promise<ModelFile>;
  /** Where URL and { hf } models are kept; null: downloaded into memory each time. */
  store?: ModelStore | null;
}

let mountCounter = 0;

/** Blobs or Files (a model's parts, in order) mounted with WORKERFS: llama.cpp reads slices on demand, never a whole file. */
export function blobFile(parts: Array<{ name: string; blob: Blob }>): ModelFile {
  return {
    name: parts[0]!.name,
    size: parts.reduce((n, p) => n + p.blob.size, 0),
    parts: parts.map(({ name, blob }) => ({
      name,
      blob,
      size: blob.size,
      read: async (offset, length) => new Uint8Array(await blob.slice(offset, offset + length).arrayBuffer()),
    })),
    mount(mod) {
      // WORKERFS reads with FileReaderSync, which only workers have.
      if (!('FileReaderSync' in globalThis)) {
        throw new ModelLoadError('Blob and URL models can only be loaded in a browser worker; in Node pass { path }.', 'unsupported_source');
      }
      bufferSmallReads(mod);
      const dir = `/hearth-model-${++mountCounter}`;
      mod.FS.mkdir(dir);
      // The parts keep their names: llama.cpp finds a split model's other parts by name beside the first.
      mod.FS.mount(mod.WORKERFS, { blobs: parts.map(({ name, blob }) => ({ name, data: blob })) }, dir);
      return { path: `${dir}/${parts[0]!.name}`, unmount: () => unmountDir(mod, dir) };
    },
  };
}

interface WorkerFs {
  reader: { readAsArrayBuffer(blob: Blob): ArrayBuffer };
  stream_ops: { read: WorkerFsRead & { buffered?: true } };
}
type WorkerFsRead = (stream: { node: { size: number; contents: Blob } }, buffer: Uint8Array, offset: number, length: number, position: number) => number;

/** Reads smaller than this are served from a window of this size, read once. */
const READ_WINDOW = 1 << 20;

/**
 * WORKERFS reads a Blob slice through FileReaderSync for every read() llama.cpp makes, and llama.cpp reads a GGUF
 * header value by value: a 152k-token vocabulary is about 600,000 reads, each tens of microseconds in Chromium
 * (10 s for a Qwen model before any weight is read). Small reads come from a window read ahead instead.
 */
function bufferSmallReads(mod: HearthModule) {
  const fs = mod.WORKERFS as WorkerFs;
  if (fs.stream_ops.read.buffered) return;
  const direct = fs.stream_ops.read;
  const windows = new WeakMap<object, { start: number; bytes: Uint8Array }>();
  const read: WorkerFsRead & { buffered?: true } = (stream, buffer, offset, length, position) => {
    const { node } = stream;
    if (length >= READ_WINDOW || position >= node.size) return direct(stream, buffer, offset, length, position);
    const end = Math.min(node.size, position + length);
    let w = windows.get(node);
    if (!w || position < w.start || end > w.start + w.bytes.length) {
      const slice = node.contents.slice(position, Math.min(node.size, position + READ_WINDOW));
      w = { start: position, bytes: new Uint8Array(fs.reader.readAsArrayBuffer(slice)) };
      windows.set(node, w);
    }
    buffer.set(w.bytes.subarray(position - w.start, end - w.start), offset);
    return end - position;
  };
  read.buffered = true;
  fs.stream_ops.read = read;
}

export function unmountDir(mod: HearthModule, dir: string) {
  try {
    mod.FS.unmount(dir);
    mod.FS.rmdir(dir);
  } catch {
    // Already gone (a crashed module is replaced wholesale); nothing to release.
  }
}

export async function openSource(source: ModelSource, opts: SourceOptions): Promise<ModelFile> {
  if (typeof Blob !== 'undefined' && source instanceof Blob) {
    const name = typeof File !== 'undefined' && source instanceof File ? source.name : 'model.gguf';
    return blobFile([{ name, blob: source }]);
  }
  if (source && typeof source === 'object' && 'path' in source && typeof source.path === 'string') {
    if (!opts.openPath) throw new ModelLoadError('{ path } sources work only in Node; in a browser pass a URL, File or Blob.', 'unsupported_source');
    return opts.openPath(source.path);
  }
  if (typeof source === 'string' || (source && typeof source === 'object' && 'hf' in source)) {
    if (opts.store) return opts.store.open(source, opts);
    return downloadToMemory(source, opts);
  }
  throw new ModelLoadError('model source must be a URL string, a Blob/File, { hf: { repo, file } } or (Node) { path }', 'invalid_source');
}

/** Downloads every part into a Blob (LoadOptions.store false). */
async function downloadToMemory(source: string | { hf: { repo: string; file: string; revision?: string } }, opts: SourceOptions): Promise<ModelFile> {
  const remote = await remoteModel(source, opts);
  const total = remote.files.reduce((n, f) => n + (f.size ?? 0), 0);
  let loaded = 0;
  const parts = [];
  opts.onProgress?.({ phase: 'download', loaded, total });
  for (const file of remote.files) {
    const res = await fetchOk(file.url, opts);
    const chunks: Uint8Array[] = [];
    try {
      const reader = res.body!.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
        loaded += value.length;
        opts.onProgress?.({ phase: 'download', loaded, total: Math.max(total, loaded) });
      }
    } catch (err) {
      if (opts.signal?.aborted) throw new AbortError('model download aborted');
      throw new ModelLoadError(`the download of ${file.url} broke off after ${loaded} bytes: ${(err as Error).message}`, 'network_error', { url: file.url });
    }
    // A Blob, not one big ArrayBuffer: the browser may keep large blobs on disk, and WORKERFS reads them in slices.
    parts.push({ name: file.name, blob: new Blob(chunks as BlobPart[]) });
  }
  return blobFile(parts);
}
