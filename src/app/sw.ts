// The app's service worker: it keeps the app's shell (page, scripts, styles, icons) and the engine (worker, glue,
// wasm), so the app opens with no network. Models are not kept here but in the model store (OPFS), conversations
// and KV state in IndexedDB. The build writes the file list and its version into this script (vite.config.ts), so a
// new build is a new worker that replaces the old cache; until then the files come from the cache first.
interface ExtendableEvent extends Event { waitUntil(p: Promise<unknown>): void }
interface FetchEvent extends ExtendableEvent { request: Request; respondWith(r: Promise<Response>): void }
interface WorkerScope { skipWaiting(): Promise<void>; clients: { claim(): Promise<void> }; addEventListener(type: string, fn: (e: never) => void): void }

declare const __PRECACHE__: { version: string; files: string[] };
const PRECACHE = __PRECACHE__;
const CACHE = `hearth-app-${PRECACHE.version}`;
const scope = self as unknown as WorkerScope;
const files = new Set(PRECACHE.files);

scope.addEventListener('install', (e: ExtendableEvent) => e.waitUntil((async () => {
  await (await caches.open(CACHE)).addAll(PRECACHE.files);
  await scope.skipWaiting();
})()));

scope.addEventListener('activate', (e: ExtendableEvent) => e.waitUntil((async () => {
  for (const key of await caches.keys()) if (key.startsWith('hearth-app-') && key !== CACHE) await caches.delete(key);
  await scope.clients.claim();
})()));

scope.addEventListener('fetch', (e: FetchEvent) => {
  const url = new URL(e.request.url);
  if (e.request.method !== 'GET' || url.origin !== location.origin) return;
  const path = url.pathname === '/' ? '/index.html' : url.pathname;
  if (!files.has(path)) return; // models and everything else: the network, as without this worker
  e.respondWith(caches.open(CACHE).then((c) => c.match(path)).then((hit) => hit ?? fetch(e.request)));
});
