// Loads the emscripten build inside the (classic) engine worker. importScripts is used because emscripten 3.1.6's
// pthread workers load the same script that way (mainScriptUrlOrBlob); a module worker could not.
import type { ModuleFactory, ModuleLoader } from '../../engine/llama/module.ts';
import { scriptUrl } from '../../trusted-types.ts';
import type { HostInit, StartStage } from './protocol.ts';

declare function importScripts(...urls: string[]): void;

export function browserModuleLoader(opts: HostInit, onStage: (stage: StartStage) => void = () => {}): ModuleLoader {
  const glue = new URL(`hearth-${opts.variant}.js`, opts.assetsUrl).href;
  return {
    variant: opts.variant,
    threads: opts.threads,
    async load() {
      importScripts(scriptUrl(glue)); // a Trusted Types sink where the worker's own policy requires them
      onStage('script');
      const factory = (globalThis as unknown as { createHearthModule: ModuleFactory }).createHearthModule;
      return factory({
        locateFile: (file) => new URL(file, opts.assetsUrl).href,
        mainScriptUrlOrBlob: glue,
        // Emscripten 3.1.6 never finishes instantiating a pthreads build whose pool is empty: keep at least one.
        hearthPoolSize: Math.max(1, opts.threads - 1),
        // The glue creates the pthread workers before it asks for the wasm, which adds its first run dependency.
        monitorRunDependencies: () => onStage('instantiate'),
      });
    },
  };
}
