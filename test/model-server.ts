// A model server for tests and benchmarks, on localhost: files with HTTP range requests (or without, on demand), CORS
// and CORP for cross-origin isolated pages, a shared bandwidth limit, a log of what it sent, and the two Hugging Face
// endpoints Hearth uses (the tree API with sizes and sha256, and resolve/) — the real Hub is on the internet, which
// these machines cannot reach. It can be stopped and started again on the same port, to play a lost network.
import { createHash } from 'node:crypto';
import { createReadStream, readFileSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface ServedFile {
  /** A file on disk, or bytes. */
  path?: string;
  bytes?: Uint8Array;
  /** Answer range requests with the whole file (200), as some servers do. */
  noRanges?: boolean;
  /** What the Hub API says its sha256 is (default: the real one). */
  sha256?: string;
  /** What the Hub API says its size is (default: the real one). */
  size?: number;
}

export interface LogEntry {
  method: string;
  path: string;
  range: string | null;
  status: number;
  bytes: number;
}

export class ModelServer {
  readonly log: LogEntry[] = [];
  /** Bytes per second for all responses together; null: unlimited. */
  bytesPerSecond: number | null = null;
  /** The Hub API's answer: null for the file list, or an HTTP status it fails with (429, 503…). */
  hubStatus: number | null = null;
  private readonly files = new Map<string, ServedFile>();
  private readonly hub = new Map<string, string[]>();
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private nextSend = 0;

  private constructor(public port: number) {}

  static async start(port = 0): Promise<ModelServer> {
    const s = new ModelServer(port);
    await s.listen();
    return s;
  }

  get url(): string {
    return `http://localhost:${this.port}`;
  }

  /** Serves `file` at `path` (starting with /). */
  add(path: string, file: ServedFile): string {
    this.files.set(path, file);
    return this.url + path;
  }

  /** A Hub repo: its files at /{repo}/resolve/{revision}/{name}, listed by /api/models/{repo}/tree/{revision}. */
  addHub(repo: string, revision: string, files: Record<string, ServedFile>) {
    for (const [name, file] of Object.entries(files)) this.add(`/${repo}/resolve/${revision}/${name}`, file);
    this.hub.set(
      `/api/models/${repo}/tree/${revision}`,
      Object.keys(files).map((name) => `/${repo}/resolve/${revision}/${name}`),
    );
  }

  /** Bytes of `path` sent so far, by all requests or by those from log entry `since` on. */
  sent(path: string, since = 0): number {
    return this.log
      .slice(since)
      .filter((e) => e.path === path)
      .reduce((n, e) => n + e.bytes, 0);
  }

  /** Closes the port and every open connection (downloads in flight break off). */
  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = null;
  }

  /** Listens again on the same port. */
  listen(): Promise<void> {
    const server = createServer((req, res) => void this.handle(req, res).catch(() => res.destroy()));
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    this.server = server;
    return new Promise((resolve) =>
      server.listen(this.port, 'localhost', () => {
        this.port = (server.address() as { port: number }).port;
        resolve();
      }),
    );
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const path = decodeURIComponent((req.url ?? '/').split('?')[0]!);
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Allow-Headers', 'Range');
    res.setHeader('Access-Control-Expose-Headers', 'Content-Length, Content-Range, Accept-Ranges, ETag');
    res.setHeader('Cross-Origin-Resource-Policy', 'cross-origin');
    const entry: LogEntry = {
      method: req.method ?? 'GET',
      path,
      range: req.headers.range ?? null,
      status: 200,
      bytes: 0,
    };
    this.log.push(entry);
    if (req.method === 'OPTIONS') return void res.writeHead((entry.status = 204)).end();
    const listing = this.hub.get(path) ?? this.hub.get(path.replace(/\/$/, ''));
    if (listing && this.hubStatus) return void res.writeHead((entry.status = this.hubStatus)).end('unavailable');
    if (listing) return this.sendHubTree(res, listing);
    const file = this.files.get(path);
    if (!file) return void res.writeHead((entry.status = 404)).end('not found');
    const size = file.path ? statSync(file.path).size : file.bytes!.length;
    res.setHeader('ETag', `"${size}"`);
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    let start = 0;
    let end = size; // exclusive
    if (range && !file.noRanges) {
      start = Number(range[1]);
      end = range[2] ? Math.min(size, Number(range[2]) + 1) : size;
      if (start >= size) {
        res.setHeader('Content-Range', `bytes */${size}`);
        return void res.writeHead((entry.status = 416)).end();
      }
      res.setHeader('Content-Range', `bytes ${start}-${end - 1}/${size}`);
      entry.status = 206;
    }
    if (!file.noRanges) res.setHeader('Accept-Ranges', 'bytes');
    res.writeHead(entry.status, { 'Content-Length': end - start, 'Content-Type': 'application/octet-stream' });
    if (req.method === 'HEAD') return void res.end();
    const body = file.path
      ? createReadStream(file.path, { start, end: end - 1, highWaterMark: 64 << 10 })
      : [file.bytes!.subarray(start, end)];
    for await (const data of body as AsyncIterable<Uint8Array>) {
      for (let o = 0; o < data.length; o += 64 << 10) {
        const slice = data.subarray(o, o + (64 << 10));
        await this.throttle(slice.length);
        if (res.destroyed) return;
        entry.bytes += slice.length;
        if (!res.write(slice)) await new Promise((resolve) => res.once('drain', resolve));
      }
    }
    res.end();
  }

  private sendHubTree(res: ServerResponse, paths: string[]) {
    const entries = paths.map((p) => {
      const file = this.files.get(p)!;
      const name = p.split('/').pop()!;
      const size = file.size ?? (file.path ? statSync(file.path).size : file.bytes!.length);
      file.sha256 ??= createHash('sha256')
        .update(file.path ? readFileSync(file.path) : file.bytes!)
        .digest('hex');
      return { type: 'file', oid: '0'.repeat(40), size, path: name, lfs: { oid: file.sha256, size, pointerSize: 134 } };
    });
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(entries));
  }

  /** Waits until `n` more bytes fit the shared bandwidth. */
  private async throttle(n: number) {
    if (!this.bytesPerSecond) return;
    const now = performance.now();
    const at = Math.max(now, this.nextSend);
    this.nextSend = at + (n * 1000) / this.bytesPerSecond;
    if (at - now > 1) await new Promise((resolve) => setTimeout(resolve, at - now));
  }
}
