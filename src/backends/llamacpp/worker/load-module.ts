// Loads the emscripten build inside the (classic) engine worker. importScripts is used because emscripten's pthread
// workers load the same script that way (mainScriptUrlOrBlob); a module worker could not.
import { type ModuleFactory, type ModuleLoader, stderrToLog } from '../binding/module.ts';
import { scriptUrl } from '../../../core/trusted-types.ts';
import type { HostInit, StartStage } from './protocol.ts';
import { base64ToBytes } from '../../../core/bytes.ts';

declare function importScripts(...urls: string[]): void;

export function browserModuleLoader(opts: HostInit, onStage: (stage: StartStage) => void = () => {}): ModuleLoader {
  // A relaxed-SIMD build runs under its plain twin's glue (wasm/build.mjs checks they differ only by the wasm's name).
  const glue = opts.assets[`hearth-${opts.variant.replace(/-relaxed$/, '') as 'st' | 'mt' | 'webgpu' | 'mt64'}.js`];
  const wasm = opts.assets[`hearth-${opts.variant}.wasm`];
  // Only the memory64 build may be missing, and it is started only where its files are (memory64.ts).
  if (!glue || !wasm) throw new Error(`the ${opts.variant} build is not among the engine's files`);
  return {
    variant: opts.variant,
    reason: opts.buildReason,
    threads: opts.threads,
    async load() {
      importScripts(scriptUrl(glue)); // a Trusted Types sink where the worker's own policy requires them
      onStage('script');
      const factory = (globalThis as unknown as { createHearthModule: ModuleFactory }).createHearthModule;
      return factory(
        stderrToLog(
          {
            // The wasm by the address the page was given (a bundler renames it); the glue asks for nothing else.
            locateFile: (file) => (file.endsWith('.wasm') ? wasm : new URL(file, glue).href),
            // The pthread workers start from the glue's own script.
            mainScriptUrlOrBlob: sameOriginWorker(glue),
            // Emscripten never finishes instantiating a pthreads build whose pool is empty: keep at least one.
            hearthPoolSize: Math.max(1, opts.threads - 1),
            // The glue creates the pthread workers before it asks for the wasm, which adds its first run dependency.
            monitorRunDependencies: () => onStage('instantiate'),
          },
          console.warn,
        ),
      );
    },
  };
}

/**
 * A bundler may inline a small script as a data: URL (Vite does under 4 kB). A pthread worker started from a data:
 * URL has an opaque origin: it could not share the wasm memory. A blob: URL of the same text is of this worker's
 * origin. Any other URL is returned as it is.
 */
function sameOriginWorker(url: string): string {
  const data = /^data:([^,]*?)(;base64)?,/.exec(url);
  if (!data || !/javascript/.test(data[1]!)) return url;
  const body = url.slice(data[0].length);
  const bytes = data[2] ? base64ToBytes(body) : new TextEncoder().encode(decodeURIComponent(body));
  return URL.createObjectURL(new Blob([bytes], { type: 'text/javascript' }));
}
