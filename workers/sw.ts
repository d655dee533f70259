// The app's service worker: it keeps the app's shell (page, scripts, styles, icons) and the engine (worker, glue,
// wasm), so the app opens with no network. Models are not kept here but in the model store (OPFS), conversations
// and KV state in IndexedDB. The build writes the file list and its version (a hash of their content) into this
// script (vite.config.ts), so a new build is a new worker with a cache of its own.
//
// Versions never mix. A new worker waits (no skipWaiting of its own) while pages of the old version are open; the
// page offers a reload, and only when the visitor takes it does the new worker take over, after which every page of
// the app reloads (app/update.ts). Files are fetched for the cache past the HTTP cache (cache: 'reload'), so a new
// version never stores an old copy of an unversioned file (index.html, engine.worker.js); redirected answers are not
// kept.
interface ExtendableEvent extends Event {
  waitUntil(p: Promise<unknown>): void;
}
interface FetchEvent extends ExtendableEvent {
  request: Request;
  respondWith(r: Promise<Response>): void;
}
interface MessageEventLike extends Event {
  data: unknown;
}
interface WorkerScope {
  skipWaiting(): Promise<void>;
  clients: { claim(): Promise<void> };
  addEventListener(type: string, fn: (e: never) => void): void;
}

declare const __PRECACHE__: { version: string; files: string[] };
const PRECACHE = __PRECACHE__;
const CACHE = `hearth-app-${PRECACHE.version}`;
const scope = self as unknown as WorkerScope;
const files = new Set(PRECACHE.files);

scope.addEventListener('install', (e: ExtendableEvent) =>
  e.waitUntil(
    (async () => {
      const cache = await caches.open(CACHE);
      await Promise.all(
        PRECACHE.files.map(async (path) => {
          const res = await fetch(new Request(path, { cache: 'reload' }));
          if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`); // the install fails; the old version stays
          if (res.redirected || res.type !== 'basic') return; // served from the network, never from a kept redirect
          await cache.put(path, res);
        }),
      );
    })(),
  ),
);

scope.addEventListener('activate', (e: ExtendableEvent) =>
  e.waitUntil(
    (async () => {
      for (const key of await caches.keys()) {
        if (key.startsWith('hearth-app-') && key !== CACHE) await caches.delete(key);
      }
      // The first install has no pages of another version to mix with: it serves the open page at once (offline next).
      await scope.clients.claim();
    })(),
  ),
);

// The page asks for the update when the visitor accepts the reload it offers.
scope.addEventListener('message', (e: MessageEventLike) => {
  if ((e.data as { type?: unknown } | null)?.type === 'hearth-skip-waiting') void scope.skipWaiting();
});

scope.addEventListener('fetch', (e: FetchEvent) => {
  const url = new URL(e.request.url);
  if (e.request.method !== 'GET' || url.origin !== location.origin) return;
  const path =
    e.request.mode === 'navigate' && (url.pathname === '/' || url.pathname === '/index.html')
      ? '/index.html'
      : url.pathname;
  if (!files.has(path)) return; // models and everything else: the network, as without this worker
  e.respondWith(
    caches
      .open(CACHE)
      .then((c) => c.match(path))
      .then((hit) => hit ?? fetch(e.request)),
  );
});
