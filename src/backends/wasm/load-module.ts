// Loads the emscripten build inside the (classic) engine worker. importScripts is used because emscripten 3.1.6's
// pthread workers load the same script that way (mainScriptUrlOrBlob); a module worker could not.
import type { ModuleFactory, ModuleLoader } from '../../engine/llama/module.ts';
import { scriptUrl } from '../../trusted-types.ts';
import type { AssetFile } from './assets.ts';
import type { HostInit, StartStage } from './protocol.ts';

declare function importScripts(...urls: string[]): void;

export function browserModuleLoader(opts: HostInit, onStage: (stage: StartStage) => void = () => {}): ModuleLoader {
  const glue = opts.assets[`hearth-${opts.variant}.js`];
  return {
    variant: opts.variant,
    threads: opts.threads,
    async load() {
      importScripts(scriptUrl(glue)); // a Trusted Types sink where the worker's own policy requires them
      onStage('script');
      const factory = (globalThis as unknown as { createHearthModule: ModuleFactory }).createHearthModule;
      return factory({
        // The wasm and the pthread worker script, by the addresses the page was given (a bundler renames them).
        locateFile: (file) => sameOriginWorker(opts.assets[file as AssetFile] ?? new URL(file, glue).href),
        mainScriptUrlOrBlob: glue,
        // Emscripten 3.1.6 never finishes instantiating a pthreads build whose pool is empty: keep at least one.
        hearthPoolSize: Math.max(1, opts.threads - 1),
        // The glue creates the pthread workers before it asks for the wasm, which adds its first run dependency.
        monitorRunDependencies: () => onStage('instantiate'),
      });
    },
  };
}

/**
 * Vite inlines files under 4 kB as data: URLs, and the pthread worker script (hearth-mt.worker.js) is one. A worker
 * started from a data: URL has an opaque origin: it could not load the glue or share the wasm memory. A blob: URL of
 * the same text is of this worker's origin. Any other URL (the wasm's included) is returned as it is.
 */
function sameOriginWorker(url: string): string {
  const data = /^data:([^,]*?)(;base64)?,/.exec(url);
  if (!data || !/javascript/.test(data[1]!)) return url;
  const body = url.slice(data[0].length);
  const bytes = data[2] ? Uint8Array.from(atob(body), (c) => c.charCodeAt(0)) : new TextEncoder().encode(decodeURIComponent(body));
  return URL.createObjectURL(new Blob([bytes], { type: 'text/javascript' }));
}
