// Serves the project with Vite (COOP/COEP on, so threads work) and opens bench/page.html in Debian's Chromium.
import { chromium, type Browser, type Page } from '@playwright/test';
import { createServer, type ViteDevServer } from 'vite';
import type { Bench } from './page.ts';

export interface BenchBrowser {
  page: Page;
  origin: string;
  /** Runs one method of window.bench in the page. */
  call<K extends keyof Bench>(name: K, ...args: Parameters<Bench[K]>): Promise<Awaited<ReturnType<Bench[K]>>>;
  /** Reloads the page (IndexedDB and the HTTP cache stay, like a user's reload). */
  reload(): Promise<void>;
  close(): Promise<void>;
}

export async function openBenchPage(): Promise<BenchBrowser> {
  // No HMR and no file watching: an edit during a run must not reload the page mid-measurement.
  const server: ViteDevServer = await createServer({
    server: { port: 0, host: '127.0.0.1', hmr: false, watch: null }, logLevel: 'warn',
  });
  await server.listen();
  const address = server.httpServer!.address();
  const origin = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const browser: Browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  const page = await browser.newPage();
  page.on('pageerror', (e) => console.error('[page error]', e.message));
  const ready = () => page.waitForFunction(() => (window as unknown as { benchReady?: boolean }).benchReady === true, null, { timeout: 120_000 });
  await page.goto(`${origin}/bench/page.html`);
  await ready();
  if (!(await page.evaluate(() => crossOriginIsolated))) throw new Error('the bench page is not cross-origin isolated');
  return {
    page,
    origin,
    call: (name, ...args) =>
      page.evaluate(([n, a]) => (window as unknown as { bench: Record<string, (...x: unknown[]) => unknown> }).bench[n as string]!(...(a as unknown[])), [name, args] as const) as never,
    async reload() {
      await page.reload();
      await ready();
    },
    async close() {
      await browser.close();
      await server.close();
    },
  };
}
