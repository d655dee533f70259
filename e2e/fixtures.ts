// The API tests' page, in the project's browser: Chromium through Playwright, Firefox through puppeteer-core over
// WebDriver BiDi (Playwright's Firefox channel fails against Debian's firefox-esr: "emulation.setMediaFeaturesOverride:
// unknown command"), or WebKit (WebKitGTK's MiniBrowser) through WebKitWebDriver (e2e/webkit.ts). The tests use only
// what the drivers offer, through HarnessPage, so one test source serves all three; the one thing plain WebDriver
// lacks, answering requests in the test's place (serve), makes the few tests that need it skip in WebKit.
import { test as base, type Page } from '@playwright/test';
import type { Browser as FirefoxBrowser, Page as FirefoxPage } from 'puppeteer-core';
import { launchFirefox } from './firefox.ts';
import { chromiumSite, type EngineBrowser, firefoxSite, type Site } from './site.ts';
import { WebKitDriver } from './webkit.ts';

export type { EngineBrowser };

type Hearth = typeof import('../src/index.ts');
declare global {
  interface Window {
    hearth: Hearth;
    hearthWire: typeof import('../src/api/shared/wire.ts');
    hearthPromptApi: typeof import('../src/prompt-api/prompt-api.ts');
    hearthReady: boolean;
    engine: import('../src/index.ts').HearthEngine;
  }
}

export interface HarnessPage {
  /** What engines on this page are created with. */
  backend: EngineBackend;
  simd: EngineSimd;
  goto(path: string): Promise<unknown>;
  reload(): Promise<unknown>;
  /** Runs `fn` in the page (it is sent as source: it may use only its argument and the page's globals). */
  evaluate<R, A = undefined>(fn: (arg: A) => R | Promise<R>, arg?: A): Promise<R>;
  waitForFunction(fn: () => unknown): Promise<unknown>;
  /** A click at (x, y) in the page's viewport, as a user's (the page gets a user activation), and nothing else: no
   * check or wait of the driver's own that would run script in the page. */
  tap(x: number, y: number): Promise<void>;
  /**
   * Calls `listener` with the text of each console message the page logs from now on. Null where the driver cannot
   * (WebKit's plain WebDriver). Where it can, it is the way to watch a page that must not be touched: Playwright's
   * and puppeteer's evaluate() give the page a user activation.
   */
  onConsole: ((listener: (text: string) => void) => void) | null;
  /**
   * Answers every request whose URL starts with `prefix` with `body` (with `once`, only the first; the server answers
   * the rest); returns the URLs it answered so far. Null where the driver cannot (WebKit's plain WebDriver).
   */
  serve:
    | ((
        prefix: string,
        body: Uint8Array | string,
        headers: Record<string, string>,
        options?: { once?: boolean },
      ) => Promise<() => string[]>)
    | null;
}

export type EngineBackend = 'auto' | 'wasm' | 'webgpu' | 'wllama';
export type EngineSimd = 'auto' | 'plain';

export const test = base.extend<
  {
    harness: HarnessPage;
    site: Site;
    isolated: boolean;
    backend: EngineBackend;
    simd: EngineSimd;
    adapterF16: boolean;
  },
  {
    engineBrowser: EngineBrowser;
    firefoxPrefs: Record<string, unknown>;
    firefox: FirefoxBrowser | null;
    webkit: WebKitDriver | null;
  }
>({
  engineBrowser: ['chromium', { option: true, scope: 'worker' }],
  /** Preferences of the project's Firefox profile (WebGPU's, for the GPU engine). */
  firefoxPrefs: [{}, { option: true, scope: 'worker' }],
  /** Whether the project's server sends COOP/COEP (threads). */
  isolated: [true, { option: true }],
  /** The backend the API tests ask createEngine for ('auto', the default, is wasm on machines without a GPU). */
  backend: ['auto', { option: true }],
  /** The SIMD the API tests ask createEngine for ('auto': relaxed where the browser has it). */
  simd: ['auto', { option: true }],
  /** Whether the project's WebGPU adapter offers shader-f16 (the GPU engine's shaders then compute in f16, else f32). */
  adapterF16: [true, { option: true }],

  firefox: [
    async ({ engineBrowser, firefoxPrefs }, use) => {
      if (engineBrowser !== 'firefox') return use(null);
      // npm run test:large: loading the model past 4 GiB is one call into the page, many minutes on lavapipe.
      const firefox = await launchFirefox(firefoxPrefs, process.env.HEARTH_LARGE === '1' ? 40 * 60_000 : undefined);
      await use(firefox.browser);
      await firefox.close();
    },
    { scope: 'worker' },
  ],

  webkit: [
    async ({ engineBrowser }, use) => {
      if (engineBrowser !== 'webkit') return use(null);
      const driver = await WebKitDriver.start();
      await use(driver);
      driver.stop();
    },
    { scope: 'worker' },
  ],

  // Chromium's page is Playwright's own (traces on failure); a Firefox page gets a browser context of its own, and a
  // WebKit one a browser of its own, so storage (IndexedDB) starts empty for every test as it does in Playwright.
  harness: async ({ engineBrowser, firefox, webkit, page, baseURL, backend, simd }, use) => {
    const opts = { backend, simd };
    if (engineBrowser === 'chromium') return use(chromiumHarness(page, opts));
    if (engineBrowser === 'webkit') {
      const session = await webkit!.session();
      try {
        await use(webkitHarness(session, baseURL!, opts));
      } finally {
        await session.close();
      }
      return;
    }
    const context = await firefox!.createBrowserContext();
    try {
      await use(firefoxHarness(await context.newPage(), baseURL!, opts));
    } finally {
      await context.close();
    }
  },

  /** The site's tabs in the project's browser (e2e/site.ts), each test in a fresh profile. */
  site: async ({ engineBrowser, firefox, context, page, baseURL }, use) => {
    if (engineBrowser === 'chromium') return use(chromiumSite(context, page));
    const ffContext = await firefox!.createBrowserContext();
    try {
      await use(firefoxSite(ffContext, baseURL!));
    } finally {
      await ffContext.close();
    }
  },
});

export { expect } from '@playwright/test';

type EngineChoice = Pick<HarnessPage, 'backend' | 'simd'>;

function chromiumHarness(page: Page, choice: EngineChoice): HarnessPage {
  return {
    ...choice,
    goto: (path) => page.goto(path),
    reload: () => page.reload(),
    evaluate: (fn, arg) => page.evaluate(fn, arg as never),
    waitForFunction: (fn) => page.waitForFunction(fn),
    tap: (x, y) => page.mouse.click(x, y),
    onConsole: (listener) => void page.on('console', (m) => listener(m.text())),
    async serve(prefix, body, headers, options = {}) {
      const answered: string[] = [];
      await page.route(
        (url) => url.href.startsWith(prefix),
        (route) => {
          if (options.once && answered.length) return route.fallback();
          answered.push(route.request().url());
          return route.fulfill({ body: Buffer.from(body), headers });
        },
      );
      return () => answered;
    },
  };
}

function firefoxHarness(page: FirefoxPage, baseURL: string, choice: EngineChoice): HarnessPage {
  page.setDefaultTimeout(120_000);
  return {
    ...choice,
    goto: (path) => page.goto(new URL(path, baseURL).href),
    reload: () => page.reload(),
    evaluate: (fn, arg) => page.evaluate(fn, arg as never) as never,
    waitForFunction: (fn) => page.waitForFunction(fn),
    tap: (x, y) => page.mouse.click(x, y),
    onConsole: (listener) => void page.on('console', (m) => listener(m.text())),
    async serve(prefix, body, headers, options = {}) {
      const answered: string[] = [];
      await page.setRequestInterception(true);
      // Cooperative interception (priorities): with several serve() calls, each handler sees every request, and one
      // that lets a request through must not win over the one that answers it.
      page.on('request', (request) => {
        if (request.isInterceptResolutionHandled()) return;
        if (!request.url().startsWith(prefix) || (options.once && answered.length)) {
          return void request.continue(request.continueRequestOverrides(), 0);
        }
        answered.push(request.url());
        void request.respond({ status: 200, body: Buffer.from(body), headers }, 1);
      });
      return () => answered;
    },
  };
}

function webkitHarness(
  session: import('./webkit.ts').WebKitSession,
  baseURL: string,
  choice: EngineChoice,
): HarnessPage {
  const evaluate = <R, A>(fn: (arg: A) => R | Promise<R>, arg?: A) => session.evaluate<R>(fn.toString(), arg);
  return {
    ...choice,
    goto: (path) => session.goto(new URL(path, baseURL).href),
    reload: () => session.reload(),
    evaluate,
    async waitForFunction(fn) {
      const end = Date.now() + 120_000;
      while (!(await evaluate(fn))) {
        if (Date.now() > end) throw new Error(`waitForFunction: timed out waiting for ${fn}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    tap: (x, y) => session.tap(x, y),
    onConsole: null,
    serve: null,
  };
}

/** Opens the harness page and creates an engine there (2 threads where the page allows threads). */
export async function openEngine(harness: HarnessPage, options: Record<string, unknown> = {}): Promise<boolean> {
  await harness.goto('/e2e/harness.html');
  await harness.waitForFunction(() => window.hearthReady);
  return harness.evaluate(
    async (opts) => {
      window.engine = await window.hearth.createEngine({ ...(crossOriginIsolated ? { threads: 2 } : {}), ...opts });
      return crossOriginIsolated;
    },
    { backend: harness.backend, simd: harness.simd, ...options },
  );
}
