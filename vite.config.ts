import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join, normalize, relative } from 'node:path';
import { build, type BuildEnvironmentOptions, defineConfig, type Plugin } from 'vite';
import { buildDefine, filesUnder } from './scripts/build-id.mjs';
import { workerBuildConfig } from './scripts/build-worker.mjs';
import { testCatalogue } from './e2e/test-hub.ts';

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

/** Serves the generated test models and their prompt states at /test-models/ (dev and preview only; never part of a
 * build). */
function testModels(): Plugin {
  const serve = (req: IncomingMessage, res: ServerResponse, next: () => void) => {
    const url = req.url ?? '';
    if (!url.startsWith('/test-models/')) return next();
    const name = decodeURIComponent(url.slice('/test-models/'.length).split('?')[0]!);
    const path = normalize(join(modelsDir, name));
    if (!path.startsWith(modelsDir) || !/\.(gguf|hearth-state)$/.test(name) || !existsSync(path)) {
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

/** The strict policy of the widget's test site (docs/api.md, "Content-Security-Policy"). With `everywhere`, the one a
 * site sends on every response: the engine worker then compiles wasm under it, which needs 'wasm-unsafe-eval'. */
const strictCsp = (everywhere: boolean, trustedTypes = false) =>
  "default-src 'self'; " +
  `script-src 'self'${everywhere ? " 'wasm-unsafe-eval'" : ''}; style-src 'self'; img-src 'self'; connect-src 'self'; ` +
  "worker-src 'self'; object-src 'none'; base-uri 'none'" +
  (trustedTypes ? "; require-trusted-types-for 'script'; trusted-types hearth" : '');

/**
 * The widget's demo host (e2e/widget-host.html and its stylesheet) as ordinary sites serve it: no isolation headers on
 * the server started with HEARTH_ISOLATION=off, and a strict Content-Security-Policy on the page (?csp=tt adds Trusted
 * Types, ?csp=none sends none). Under /csp-all/ every response — the page, the widget's scripts, the engine's worker
 * and wasm — carries the policy, as on sites that send one header everywhere (/csp-all-no-wasm/: without
 * 'wasm-unsafe-eval', which it needs).
 *
 * For the tests (dev and preview servers only): every request's path is logged (GET /__log lists them, with whether
 * the request bypassed the HTTP cache: what a browser fetched, its workers' requests included); /exfil/… (the tests'
 * attacker) answers nothing; /test-models/too-large.gguf announces a model of 8 GiB; POST /__deploy plays a new deploy of the app (/sw.js changes its version, and
 * /manifest.webmanifest answers with a redirect) until POST /__deploy?undo.
 */
function widgetHost(): Plugin {
  const files: Record<string, string> = { '/e2e/widget-host.html': 'text/html', '/e2e/widget-host.css': 'text/css' };
  const log: Array<{ path: string; reload: boolean }> = [];
  let deployed = false;
  const serve = (req: IncomingMessage & { cspAll?: boolean }, res: ServerResponse, next: () => void) => {
    const [path = '', query = ''] = (req.url ?? '').split('?');
    if (path === '/__log') {
      return void res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(log));
    }
    if (path === '/__deploy') {
      deployed = query !== 'undo';
      return void res.writeHead(204).end();
    }
    if (!req.cspAll) log.push({ path, reload: /no-cache/.test(String(req.headers['cache-control'] ?? '')) });
    if (deployed && path === '/sw.js' && !req.cspAll) {
      const sw = readFileSync(join(import.meta.dirname, 'dist', 'sw.js'), 'utf8').replace(
        /"version":"([0-9a-f]+)"/,
        '"version":"$1-next"',
      );
      return void res.writeHead(200, { 'Content-Type': 'text/javascript', 'Cache-Control': 'no-cache' }).end(sw);
    }
    if (deployed && path === '/manifest.webmanifest' && !query) {
      return void res.writeHead(302, { Location: '/manifest.webmanifest?moved' }).end();
    }
    // /csp-all-no-wasm/: the same policy without 'wasm-unsafe-eval', which the engine's worker cannot start under.
    const everywhere = /^\/csp-all(-no-wasm)?\//.exec(path);
    if (everywhere) {
      req.cspAll = true;
      req.url = req.url!.slice(everywhere[0].length - 1);
      res.setHeader('Content-Security-Policy', strictCsp(!everywhere[1]));
      return serve(req, res, next);
    }
    if (path.startsWith('/exfil/')) return void res.writeHead(204).end();
    // The app's catalogue tests: a test Hub (e2e/test-hub.ts) for the catalogue, and the test model as an entry.
    if (path === '/test-models/catalogue.json' && process.env.HEARTH_TEST_HUB) {
      for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
      return void res.writeHead(200, { 'Content-Type': 'application/json' }).end(testCatalogue());
    }
    // A model this device cannot run (the remote fallback's tests): its server announces 8 GiB, over any engine's
    // limit, which the model store checks before it fetches a byte. Nothing is served.
    if (path === '/test-models/too-large.gguf') {
      return void res
        .writeHead(req.method === 'HEAD' ? 200 : 404, {
          'Content-Length': String(req.method === 'HEAD' ? 2 ** 33 : 0),
          'Content-Type': 'application/octet-stream',
        })
        .end();
    }
    if (!files[path]) return next();
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    const mode = new URLSearchParams(query).get('csp');
    if (!req.cspAll && mode !== 'none') res.setHeader('Content-Security-Policy', strictCsp(false, mode === 'tt'));
    res.setHeader('Content-Type', files[path]);
    createReadStream(join(import.meta.dirname, path)).pipe(res);
  };
  return {
    name: 'hearth-widget-host',
    configureServer: (server) => void server.middlewares.use(serve),
    configurePreviewServer: (server) => void server.middlewares.use(serve),
  };
}

const TYPES: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.map': 'application/json' };

/** Sends a test page's file with the server's headers and a type by its extension. */
function sendFile(res: ServerResponse, file: string) {
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.setHeader('Content-Type', TYPES[file.slice(file.lastIndexOf('.'))] ?? 'application/octet-stream');
  createReadStream(file).pipe(res);
}

/** The e2e harness page (e2e/harness.html, window.hearth), built apart (npm run build:e2e) and served by the preview
 * server from there: it is for tests only and never part of the site in dist/. */
const e2eDist = join(import.meta.dirname, '.cache', 'e2e-dist');
const E2E_PAGES = ['/e2e/harness.html', '/e2e/prompt-api-wpt.html'];
function e2eHarness(): Plugin {
  const serve = (req: IncomingMessage, res: ServerResponse, next: () => void) => {
    const path = (req.url ?? '').split('?')[0]!;
    if (!E2E_PAGES.includes(path) && !path.startsWith('/e2e-assets/')) return next();
    const file = normalize(join(e2eDist, path));
    if (!file.startsWith(e2eDist) || !existsSync(file)) return next();
    sendFile(res, file);
  };
  return { name: 'hearth-e2e-harness', configurePreviewServer: (server) => void server.middlewares.use(serve) };
}

/**
 * The web-platform-tests of the Prompt API (e2e/wpt/, run by e2e/prompt-api-wpt.html) where their files ask for them:
 * /wpt/… the tests, /resources/testharness.js the harness (the npm package wpt-runner's copy), and Hearth's stand-ins
 * for the report and testdriver (e2e/wpt-support/). Dev and preview servers only.
 */
function wptFiles(): Plugin {
  const root = import.meta.dirname;
  const resources: Record<string, string> = {
    '/resources/testharness.js': join(root, 'node_modules/wpt-runner/testharness/testharness.js'),
    '/resources/testharnessreport.js': join(root, 'e2e/wpt-support/testharnessreport.js'),
    '/resources/testdriver.js': join(root, 'e2e/wpt-support/testdriver.js'),
    '/resources/testdriver-vendor.js': join(root, 'e2e/wpt-support/testdriver-vendor.js'),
    '/common/gc.js': join(root, 'e2e/wpt/common/gc.js'),
  };
  const wpt = join(root, 'e2e', 'wpt');
  const serve = (req: IncomingMessage, res: ServerResponse, next: () => void) => {
    const path = decodeURIComponent((req.url ?? '').split('?')[0]!);
    const test = path.startsWith('/wpt/') ? normalize(join(wpt, path.slice('/wpt/'.length))) : '';
    const file = resources[path] ?? (test.startsWith(wpt) ? test : '');
    if (!file || !existsSync(file)) return next();
    sendFile(res, file);
  };
  return {
    name: 'hearth-wpt',
    configureServer: (server) => void server.middlewares.use(serve),
    configurePreviewServer: (server) => void server.middlewares.use(serve),
  };
}

/** Writes into the built service worker (workers/sw.ts) the files it keeps for offline use, and a version that
 * changes with their content. Not the widget's files (a site's, not the app's), not source maps. */
function precache(): Plugin {
  return {
    name: 'hearth-precache',
    apply: 'build',
    closeBundle() {
      const dist = join(import.meta.dirname, 'dist');
      const files = filesUnder(dist)
        .map((f) => `/${relative(dist, f)}`)
        .filter((f) => f !== '/sw.js' && !f.endsWith('.map') && !f.startsWith('/widget/'))
        .sort();
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

export default defineConfig(({ mode }) => ({
  // The test host first: it logs every request, and /csp-all/ rewrites the path the others see.
  plugins: [
    widgetHost(),
    testModels(),
    e2eHarness(),
    wptFiles(),
    engineWorker(),
    ...(mode === 'e2e' ? [] : [precache()]),
  ],
  define: buildDefine(),
  server: { headers },
  preview: { headers },
  build: (mode === 'e2e'
    ? {
        target: 'es2022',
        outDir: e2eDist,
        emptyOutDir: true,
        assetsDir: 'e2e-assets',
        copyPublicDir: false,
        rollupOptions: {
          input: {
            harness: join(import.meta.dirname, 'e2e/harness.html'),
            'prompt-api-wpt': join(import.meta.dirname, 'e2e/prompt-api-wpt.html'),
          },
        },
      }
    : {
        target: 'es2022',
        rollupOptions: {
          input: { main: join(import.meta.dirname, 'index.html'), sw: join(import.meta.dirname, 'workers/sw.ts') },
          // The service worker keeps a fixed address: a new build must replace it, not add another.
          output: {
            entryFileNames: (chunk: { name: string }) => (chunk.name === 'sw' ? 'sw.js' : 'assets/[name]-[hash].js'),
          },
        },
      }) as BuildEnvironmentOptions,
}));
