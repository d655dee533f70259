// What a model is to the engine once found: its files (ModelFile, ModelPart), read in slices and mounted into
// llama.cpp's file system. Blobs and Files (a browser's download, the model store's OPFS or IndexedDB files) are
// mounted with WORKERFS; Node's folders with NODEFS (node-dir.ts).
import { ModelLoadError } from '../../errors.ts';

/** An emscripten file system (the part a model is mounted into): what an emscripten module built with WORKERFS and,
 * in Node, NODEFS offers. The llama.cpp engine's module is one (backends/llamacpp/binding/module.ts). */
export interface FileSystemHost {
  FS: {
    mkdir(path: string): void;
    mount(type: unknown, opts: Record<string, unknown>, path: string): void;
    unmount(path: string): void;
    rmdir(path: string): void;
  };
  WORKERFS: unknown;
  NODEFS: unknown;
}

/** One file of a model: a whole model, or one part of a split one. */
export interface ModelPart {
  name: string;
  size: number;
  read(offset: number, length: number): Promise<Uint8Array>;
  /** The file itself, where it is a Blob (a browser). */
  blob?: Blob;
  /** The OPFS file behind `blob` (model store): read through a sync access handle while mounted in a worker. */
  opfs?: FileSystemFileHandle;
  /** The file's sha256 by a faster route than reading it through read() (Node's own crypto), where there is one. */
  sha256?: () => Promise<string>;
}

export interface ModelFile {
  /** The (first) file's name. */
  name: string;
  /** Bytes of all parts. */
  size: number;
  /** The files in order: one, or the parts of a split model (name-0000i-of-0000N.gguf). */
  parts: ModelPart[];
  /** Makes the files visible to llama.cpp; returns the first one's path there and how to undo it. */
  mount(mod: FileSystemHost): Promise<{ path: string; unmount(): void }>;
  /** The model's identity (models/sha256.ts) where already known: the model store computed it at download. */
  identity?: string;
}

let mountCounter = 0;

/**
 * Blobs or Files (a model's parts, in order) mounted with WORKERFS: llama.cpp reads slices on demand, never a whole
 * file. Parts from the model store (`opfs`) are read through OPFS sync access handles while mounted.
 */
export function blobFile(parts: Array<{ name: string; blob: Blob; opfs?: FileSystemFileHandle }>): ModelFile {
  return {
    name: parts[0]!.name,
    size: parts.reduce((n, p) => n + p.blob.size, 0),
    parts: parts.map(({ name, blob, opfs }) => ({
      name,
      blob,
      opfs,
      size: blob.size,
      read: async (offset, length) => new Uint8Array(await blob.slice(offset, offset + length).arrayBuffer()),
    })),
    async mount(mod) {
      // WORKERFS reads with FileReaderSync, which only workers have.
      if (!('FileReaderSync' in globalThis)) {
        throw new ModelLoadError(
          'Blob and URL models can only be loaded in a browser worker; in Node pass { path }.',
          'unsupported_source',
        );
      }
      installReads(mod);
      const handles = await openSyncReaders(parts);
      const dir = `/hearth-model-${++mountCounter}`;
      mod.FS.mkdir(dir);
      // The parts keep their names: llama.cpp finds a split model's other parts by name beside the first.
      mod.FS.mount(mod.WORKERFS, { blobs: parts.map(({ name, blob }) => ({ name, data: blob })) }, dir);
      return {
        path: `${dir}/${parts[0]!.name}`,
        unmount: () => {
          unmountDir(mod, dir);
          for (const [blob, handle] of handles) {
            syncReaders.delete(blob);
            handle.close();
          }
        },
      };
    },
  };
}

/** What WORKERFS reads with, in place of FileReaderSync, for files of the model store. */
interface SyncReader {
  read(buffer: Uint8Array, options: { at: number }): number;
  close(): void;
}
type SyncReadable = FileSystemFileHandle & { createSyncAccessHandle(options?: { mode: string }): Promise<SyncReader> };

/** The mounted Blobs that have a sync access handle. */
const syncReaders = new WeakMap<Blob, SyncReader>();

/**
 * Opens a sync access handle on each part from OPFS. FileReaderSync reads a file-backed Blob through the browser
 * process, about 50 MB/s in Chromium, where a sync access handle reads the file in this worker at disk speed. The
 * handles are read-only where the browser allows (several tabs may read a model at once) and closed at unmount.
 */
async function openSyncReaders(
  parts: Array<{ blob: Blob; opfs?: FileSystemFileHandle }>,
): Promise<Map<Blob, SyncReader>> {
  const handles = new Map<Blob, SyncReader>();
  for (const { blob, opfs } of parts) {
    if (!opfs || !('createSyncAccessHandle' in opfs)) continue;
    const file = opfs as SyncReadable;
    try {
      const handle = await file
        .createSyncAccessHandle({ mode: 'read-only' })
        .catch(() => file.createSyncAccessHandle());
      handles.set(blob, handle);
      syncReaders.set(blob, handle);
    } catch {
      // Held elsewhere (another tab loading it without read-only handles): FileReaderSync reads it, slower.
    }
  }
  return handles;
}

interface WorkerFs {
  reader: { readAsArrayBuffer(blob: Blob): ArrayBuffer };
  stream_ops: { read: WorkerFsRead & { buffered?: true } };
}
type WorkerFsRead = (
  stream: { node: { size: number; contents: Blob } },
  buffer: Uint8Array,
  offset: number,
  length: number,
  position: number,
) => number;

/** Reads smaller than this are served from a window of this size, read once. */
const READ_WINDOW = 1 << 20;

/**
 * WORKERFS reads a Blob slice through FileReaderSync for every read() llama.cpp makes, and llama.cpp reads a GGUF
 * header value by value: a 152k-token vocabulary is about 600,000 reads, each tens of microseconds in Chromium
 * (10 s for a Qwen model before any weight is read). Small reads come from a window read ahead instead; files with a
 * sync access handle (openSyncReaders) are read through it.
 */
function installReads(mod: FileSystemHost) {
  const fs = mod.WORKERFS as WorkerFs;
  if (fs.stream_ops.read.buffered) return;
  const direct = fs.stream_ops.read;
  /** Reads `length` bytes at `position` of the node's file into buffer[offset…]; returns how many it read. */
  const readAt: WorkerFsRead = (stream, buffer, offset, length, position) => {
    const sync = syncReaders.get(stream.node.contents);
    if (!sync) return direct(stream, buffer, offset, length, position);
    return syncRead(
      sync,
      buffer.subarray(offset, offset + Math.max(0, Math.min(length, stream.node.size - position))),
      position,
    );
  };
  const windows = new WeakMap<object, { start: number; bytes: Uint8Array }>();
  const read: WorkerFsRead & { buffered?: true } = (stream, buffer, offset, length, position) => {
    const { node } = stream;
    if (length >= READ_WINDOW || position >= node.size) return readAt(stream, buffer, offset, length, position);
    const end = Math.min(node.size, position + length);
    let w = windows.get(node);
    if (!w || position < w.start || end > w.start + w.bytes.length) {
      const bytes = new Uint8Array(Math.min(node.size - position, READ_WINDOW));
      const n = readAt(stream, bytes, 0, bytes.length, position);
      w = { start: position, bytes: bytes.subarray(0, n) };
      windows.set(node, w);
    }
    const n = Math.max(0, Math.min(end, w.start + w.bytes.length) - position);
    buffer.set(w.bytes.subarray(position - w.start, position - w.start + n), offset);
    return n;
  };
  read.buffered = true;
  fs.stream_ops.read = read;
}

/** Whether sync access handles take views of a SharedArrayBuffer (the threaded build's heap); learnt on first use. */
let sharedReads = true;

function syncRead(sync: SyncReader, into: Uint8Array, at: number): number {
  // Pages that are not cross-origin isolated have no SharedArrayBuffer at all.
  const shared = typeof SharedArrayBuffer !== 'undefined' && into.buffer instanceof SharedArrayBuffer;
  if (sharedReads || !shared) {
    try {
      return readFully(sync, into, at);
    } catch (err) {
      if (!(err instanceof TypeError) || !shared) throw err;
      sharedReads = false;
    }
  }
  const copy = new Uint8Array(into.length);
  const n = readFully(sync, copy, at);
  into.set(copy.subarray(0, n));
  return n;
}

/** A sync read may return fewer bytes than asked: read until the view is full or the file ends. */
function readFully(sync: SyncReader, into: Uint8Array, at: number): number {
  let done = 0;
  while (done < into.length) {
    const n = sync.read(into.subarray(done), { at: at + done });
    if (n <= 0) break;
    done += n;
  }
  return done;
}

export function unmountDir(mod: FileSystemHost, dir: string) {
  try {
    mod.FS.unmount(dir);
    mod.FS.rmdir(dir);
  } catch {
    // Already gone (a crashed module is replaced wholesale); nothing to release.
  }
}
