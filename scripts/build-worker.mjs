// npm run build:worker — bundles src/worker/entry.ts (with Comlink and the engine) into one classic script,
// public/hearth/engine.worker.js, beside the wasm builds it loads with importScripts. --watch rebuilds on change.
import { build } from 'vite';
import { join } from 'node:path';
import { root } from './llama-source.mjs';

/** @returns {import('vite').InlineConfig} */
export function workerBuildConfig({ watch = false } = {}) {
  return {
    configFile: false,
    root,
    logLevel: 'warn',
    build: {
      lib: { entry: join(root, 'src/worker/entry.ts'), formats: ['iife'], name: 'hearthEngineWorker', fileName: () => 'engine.worker.js' },
      outDir: join(root, 'public/hearth'),
      emptyOutDir: false, // the wasm builds live there too
      target: 'es2022',
      sourcemap: true,
      copyPublicDir: false,
      watch: watch ? {} : null,
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await build(workerBuildConfig({ watch: process.argv.includes('--watch') }));
  if (!process.argv.includes('--watch')) console.log('[build:worker] public/hearth/engine.worker.js');
}
