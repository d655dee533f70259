import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join, normalize, relative } from 'node:path';
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

/** The widget's demo host (e2e/widget-host.html and its stylesheet) as an ordinary site serves it: a strict
 * Content-Security-Policy, and no isolation headers on the server started with HEARTH_ISOLATION=off. */
function widgetHost(): Plugin {
  const files: Record<string, string> = { '/e2e/widget-host.html': 'text/html', '/e2e/widget-host.css': 'text/css' };
  const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; worker-src 'self'; object-src 'none'; base-uri 'none'";
  const serve = (req: IncomingMessage, res: ServerResponse, next: () => void) => {
    const path = (req.url ?? '').split('?')[0]!;
    if (!files[path]) return next();
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    res.setHeader('Content-Security-Policy', csp);
    res.setHeader('Content-Type', files[path]);
    createReadStream(join(import.meta.dirname, path)).pipe(res);
  };
  return {
    name: 'hearth-widget-host',
    configureServer: (server) => void server.middlewares.use(serve),
    configurePreviewServer: (server) => void server.middlewares.use(serve),
  };
}

/** Writes into the built service worker (src/app/sw.ts) the files it keeps for offline use, and a version that
 * changes with their content. Not the e2e pages, not source maps. */
function precache(): Plugin {
  return {
    name: 'hearth-precache',
    apply: 'build',
    closeBundle() {
      const dist = join(import.meta.dirname, 'dist');
      const walk = (dir: string): string[] => readdirSync(dir, { withFileTypes: true })
        .flatMap((d) => (d.isDirectory() ? walk(join(dir, d.name)) : [join(dir, d.name)]));
      const files = walk(dist).map((f) => `/${relative(dist, f)}`)
        .filter((f) => f !== '/sw.js' && !f.endsWith('.map') && !f.startsWith('/e2e/') && !f.startsWith('/widget/')).sort();
      const hash = createHash('sha256');
      for (const f of files) hash.update(f).update(readFileSync(join(dist, f)));
      const sw = join(dist, 'sw.js');
      const manifest = JSON.stringify({ version: hash.digest('hex').slice(0, 16), files });
      writeFileSync(sw, readFileSync(sw, 'utf8').replace('__PRECACHE__', manifest));
    },
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
  plugins: [testModels(), widgetHost(), engineWorker(), precache()],
  server: { headers },
  preview: { headers },
  build: {
    target: 'es2022',
    rollupOptions: {
      input: {
        main: join(import.meta.dirname, 'index.html'), harness: join(import.meta.dirname, 'e2e/harness.html'),
        sw: join(import.meta.dirname, 'src/app/sw.ts'),
      },
      // The service worker keeps a fixed address: a new build must replace it, not add another.
      output: { entryFileNames: (chunk) => (chunk.name === 'sw' ? 'sw.js' : 'assets/[name]-[hash].js') },
    },
  },
});
