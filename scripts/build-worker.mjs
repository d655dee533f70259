// npm run build:worker — bundles workers/engine.worker.ts (the engine, and its start: worker/host.ts) into one classic
// script, public/hearth/engine.worker.js, beside the wasm builds it loads with importScripts; and copies @wllama/wllama's
// wasm there (the 'webgpu' backend loads it from Hearth's assets, never from a CDN). --watch rebuilds on change.
import { copyFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { build } from 'vite';
import { dirname, join } from 'node:path';
import { buildDefine } from './build-id.mjs';
import { root } from './llama-source.mjs';

export function copyWllamaWasm() {
  const pkg = dirname(createRequire(import.meta.url).resolve('@wllama/wllama/package.json'));
  mkdirSync(join(root, 'public/hearth'), { recursive: true });
  copyFileSync(join(pkg, 'esm/wasm/wllama.wasm'), join(root, 'public/hearth/wllama.wasm'));
}

/** @returns {import('vite').InlineConfig} */
export function workerBuildConfig({ watch = false } = {}) {
  return {
    configFile: false,
    root,
    logLevel: 'warn',
    define: buildDefine(),
    build: {
      lib: {
        entry: join(root, 'workers/engine.worker.ts'),
        formats: ['iife'],
        name: 'hearthEngineWorker',
        fileName: () => 'engine.worker.js',
      },
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
  copyWllamaWasm();
  await build(workerBuildConfig({ watch: process.argv.includes('--watch') }));
  if (!process.argv.includes('--watch')) console.log('[build:worker] public/hearth/engine.worker.js');
}
