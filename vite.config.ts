import { createReadStream, existsSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join, normalize } from 'node:path';
import { build, defineConfig, type Plugin } from 'vite';
import { workerBuildConfig } from './scripts/build-worker.mjs';

// Threads need SharedArrayBuffer, which browsers allow only on cross-origin isolated pages. HEARTH_ISOLATION=off
// serves the same pages without these headers, where Hearth falls back to its single-thread build (the e2e tests
// run both ways).
const isolated = process.env.HEARTH_ISOLATION !== 'off';
const headers: Record<string, string> = isolated
  ? {
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Embedder-Policy': 'require-corp',
      'Cross-Origin-Resource-Policy': 'same-origin',
    }
  : {};

const modelsDir = join(import.meta.dirname, '.cache', 'models');

/** Serves the generated test models at /test-models/ (dev and preview only; never part of a build). */
function testModels(): Plugin {
  const serve = (req: IncomingMessage, res: ServerResponse, next: () => void) => {
    const url = req.url ?? '';
    if (!url.startsWith('/test-models/')) return next();
    const name = decodeURIComponent(url.slice('/test-models/'.length).split('?')[0]!);
    const path = normalize(join(modelsDir, name));
    if (!path.startsWith(modelsDir) || !name.endsWith('.gguf') || !existsSync(path)) {
      res.statusCode = 404;
      return res.end('no such test model');
    }
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    res.setHeader('Content-Type', 'application/octet-stream');
    res.setHeader('Content-Length', statSync(path).size);
    if (req.method === 'HEAD') return res.end();
    createReadStream(path).pipe(res);
  };
  return {
    name: 'hearth-test-models',
    configureServer: (server) => void server.middlewares.use(serve),
    configurePreviewServer: (server) => void server.middlewares.use(serve),
  };
}

/** In dev, keeps public/hearth/engine.worker.js rebuilt from src/ (a classic script, not an ES module). */
function engineWorker(): Plugin {
  return {
    name: 'hearth-engine-worker',
    apply: 'serve',
    async configureServer(server) {
      const watcher = await build(workerBuildConfig({ watch: true }));
      server.httpServer?.once('close', () => void (watcher as { close?: () => unknown }).close?.());
    },
  };
}

export default defineConfig({
  plugins: [testModels(), engineWorker()],
  server: { headers },
  preview: { headers },
  build: {
    target: 'es2022',
    rollupOptions: {
      input: { main: join(import.meta.dirname, 'index.html'), harness: join(import.meta.dirname, 'e2e/harness.html') },
    },
  },
});
