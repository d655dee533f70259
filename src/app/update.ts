// Installs the service worker (workers/sw.ts) and applies its updates without mixing versions: a new version waits
// until the visitor accepts the reload this offers; then the new worker takes over and every open page of the app
// reloads (after the answer it is writing, if any), so no page runs old code against new files.

/** `offer(apply)` shows the offer; `idle()` resolves when the page may reload (no answer being written). */
export function keepUpToDate(offer: (apply: () => void) => void, idle: () => Promise<void>) {
  const sw = navigator.serviceWorker;
  // A page that had no worker yet is taken over by the first one (workers/sw.ts claims it): that is not an update.
  let updating = sw.controller !== null;
  sw.addEventListener('controllerchange', () => {
    if (!updating) return void (updating = true);
    void idle().then(() => location.reload());
  });
  void sw
    .register('/sw.js', { updateViaCache: 'none' })
    .then((reg) => {
      const waiting = (worker: ServiceWorker | null) => {
        if (worker && sw.controller) offer(() => worker.postMessage({ type: 'hearth-skip-waiting' }));
      };
      waiting(reg.waiting);
      reg.addEventListener('updatefound', () => {
        const worker = reg.installing;
        worker?.addEventListener('statechange', () => {
          if (worker.state === 'installed') waiting(worker);
        });
      });
    })
    .catch(() => {});
}
