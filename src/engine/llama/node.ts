// Loads the wasm build in Node (unit tests, benchmarks). The browser path is workers/load-module.ts.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { BuildVariant, ModuleFactory, ModuleLoader } from './module.ts';

export function nodeModuleLoader(opts: { dir: string; variant?: BuildVariant; threads?: number }): ModuleLoader {
  const variant = opts.variant ?? 'st';
  const threads = variant === 'st' ? 1 : Math.max(1, opts.threads ?? 1);
  const require = createRequire(import.meta.url);
  return {
    variant,
    threads,
    async load() {
      const factory = require(join(opts.dir, `hearth-${variant}.js`)) as ModuleFactory;
      // Handing over the bytes keeps emscripten 3.1.6 from fetch()ing a file path, which Node's fetch rejects.
      const wasmBinary = readFileSync(join(opts.dir, `hearth-${variant}.wasm`));
      return factory({ wasmBinary, hearthPoolSize: Math.max(1, threads - 1), print: () => {}, printErr: () => {} });
    },
  };
}
