// Serves the project with Vite (COOP/COEP on, so threads work) and opens bench/page.html in Debian's Chromium, in a
// browser context of its own (in memory, or a profile on disk).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from '@playwright/test';
import { launchFirefox } from '../e2e/firefox.ts';
import { build } from 'esbuild';
import { createServer, type Plugin, type ViteDevServer } from 'vite';
import type { Bench } from './page.ts';

export interface BenchBrowser {
  page: Page;
  origin: string;
  /** Runs one method of window.bench in the page. */
  call<K extends keyof Bench>(name: K, ...args: Parameters<Bench[K]>): Promise<Awaited<ReturnType<Bench[K]>>>;
  /** Reloads the page (IndexedDB and the HTTP cache stay, like a user's reload). */
  reload(): Promise<void>;
  /** Closes the page and opens it again in the same profile (a visitor who comes back). */
  reopen(): Promise<void>;
  close(): Promise<void>;
}

/** `profile`: a browser profile on disk (storage as a visitor's browser keeps it; OPFS at full quota), else in memory.
 */
export async function openBenchPage(opts: { profile?: boolean } = {}): Promise<BenchBrowser> {
  const { server, origin } = await serve();
  const launch = {
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  };
  const profile = opts.profile ? mkdtempSync(join(tmpdir(), 'hearth-bench-')) : null;
  let browser: Browser | null = null;
  let context: BrowserContext;
  if (profile) {
    context = await chromium.launchPersistentContext(profile, launch);
  } else {
    browser = await chromium.launch(launch);
    context = await browser.newContext();
  }
  let page = await context.newPage();
  const ready = () =>
    page.waitForFunction(() => (window as unknown as { benchReady?: boolean }).benchReady === true, null, {
      timeout: 120_000,
    });
  const open = async () => {
    page.on('pageerror', (e) => console.error('[page error]', e.message));
    await page.goto(`${origin}/bench/page.html`);
    await ready();
    if (!(await page.evaluate(() => crossOriginIsolated))) {
      throw new Error('the bench page is not cross-origin isolated');
    }
  };
  await open();
  const b: BenchBrowser = {
    page,
    origin,
    call: (name, ...args) => page.evaluate(callBench, [name, args] as const) as never,
    async reload() {
      await page.reload();
      await ready();
    },
    async reopen() {
      await page.close();
      page = await context.newPage();
      b.page = page;
      await open();
    },
    async close() {
      await context.close();
      await browser?.close();
      await server.close();
      if (profile) rmSync(profile, { recursive: true, force: true });
    },
  };
  return b;
}

/** The project served by Vite (COOP/COEP on) on a free port. No HMR and no file watching: an edit during a run must
 * not reload the page mid-measurement. */
async function serve(): Promise<{ server: ViteDevServer; origin: string }> {
  const server = await createServer({
    server: { port: 0, host: '127.0.0.1', hmr: false, watch: null },
    logLevel: 'warn',
    plugins: [traceWorkerScript()],
  });
  await server.listen();
  const address = server.httpServer!.address();
  return { server, origin: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` };
}

/** bench/gpu-trace-worker.ts as a classic script at /bench/gpu-trace-worker.js (a worker's importScripts takes no
 * module), bundled when asked for. */
function traceWorkerScript(): Plugin {
  return {
    name: 'hearth-bench-gpu-trace-worker',
    configureServer(server) {
      server.middlewares.use('/bench/gpu-trace-worker.js', async (_req, res) => {
        const out = await build({
          entryPoints: [join(import.meta.dirname, 'gpu-trace-worker.ts')],
          bundle: true,
          format: 'iife',
          write: false,
          logLevel: 'warning',
        });
        res.setHeader('Content-Type', 'text/javascript');
        res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
        res.end(out.outputFiles[0]!.text);
      });
    },
  };
}

/** Runs in the page: one method of window.bench. */
function callBench([name, args]: readonly [string, unknown[]]): unknown {
  return (window as unknown as { bench: Record<string, (...x: unknown[]) => unknown> }).bench[name]!(...args);
}

/**
 * bench/page.html in Debian's firefox-esr (puppeteer over WebDriver BiDi, as the e2e tests drive it), a fresh profile
 * with `prefs` (WebGPU's, for the GPU benchmark: Firefox's adapter is the one here with shader-f16).
 */
export async function openFirefoxBenchPage(
  prefs: Record<string, unknown>,
): Promise<Pick<BenchBrowser, 'call' | 'close' | 'origin'>> {
  const { server, origin } = await serve();
  const firefox = await launchFirefox(prefs, 1_800_000); // a run on a CPU adapter (lavapipe) takes minutes
  const close = async () => {
    await firefox.close();
    await server.close();
  };
  try {
    const page = await firefox.browser.newPage();
    page.setDefaultTimeout(600_000);
    page.on('pageerror', (e) => console.error('[page error]', (e as Error).message));
    await page.goto(`${origin}/bench/page.html`);
    await page.waitForFunction(() => (window as unknown as { benchReady?: boolean }).benchReady === true);
    if (!(await page.evaluate(() => crossOriginIsolated)))
      throw new Error('the bench page is not cross-origin isolated');
    return { origin, call: (name, ...args) => page.evaluate(callBench, [name, args] as const) as never, close };
  } catch (err) {
    await close();
    throw err;
  }
}
