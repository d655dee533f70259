// A site as a visitor's browser holds it — tabs of one profile — for the specs that drive pages (the widget, the app,
// tabs sharing an engine, the model store): one test source for Chromium (Playwright) and Firefox (puppeteer-core over
// WebDriver BiDi). Elements are found by CSS selectors through open shadow roots (the widget's), in the page; clicks
// and key presses are the driver's real input events. What the browser fetched is read from the test server's own log
// (vite.config.ts), the same for every browser and for requests from workers.
import type {
  BrowserContext,
  ElementHandle as PwElement,
  JSHandle as PwHandle,
  Page as PwPage,
} from '@playwright/test';
import type {
  BrowserContext as FfContext,
  ElementHandle as FfElement,
  JSHandle as FfHandle,
  Page as FfPage,
} from 'puppeteer-core';

/** The browsers the e2e projects run in. */
export type EngineBrowser = 'chromium' | 'firefox' | 'webkit';

export interface Tab {
  readonly browser: EngineBrowser;
  goto(path: string): Promise<void>;
  reload(): Promise<void>;
  close(): Promise<void>;
  /** Runs `fn` in the page (sent as source: it may use only its argument and the page's globals). */
  evaluate<R, A = undefined>(fn: (arg: A) => R | Promise<R>, arg?: A): Promise<R>;
  waitFor<A = undefined>(fn: (arg: A) => unknown, arg?: A): Promise<void>;
  click(selector: string): Promise<void>;
  /** Sets a text field's value, as pasting it would. */
  fill(selector: string, text: string): Promise<void>;
  press(selector: string, key: 'Enter' | 'Escape'): Promise<void>;
  /** The text of every element the selector matches (whitespace collapsed), in document order. */
  texts(selector: string): Promise<string[]>;
  count(selector: string): Promise<number>;
  visible(selector: string): Promise<boolean>;
  screenshot(path: string): Promise<void>;
  /** The page's own Playwright page (Chromium only: DevTools protocol, service workers). */
  readonly playwright: PwPage | null;
}

export interface Site {
  readonly browser: EngineBrowser;
  /** A new tab; `path` opened in it when given. */
  tab(path?: string): Promise<Tab>;
  /** Runs `fn` before the page's own scripts in every tab opened from now on, and every navigation of them. */
  initScript(fn: () => void): void;
  offline(on: boolean): Promise<void>;
}

/** Every element that matches `selector` in the document and in the open shadow roots under it (runs in the page). */
function deepAll(selector: string): Element[] {
  const found: Element[] = [];
  const walk = (root: Document | ShadowRoot) => {
    found.push(...root.querySelectorAll(selector));
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) walk(el.shadowRoot);
  };
  walk(document);
  return found;
}

// Page-side helpers, sent as source with deepAll inlined.
const inPage = {
  texts: `(selector) => (${deepAll})(selector).map((e) => (e.textContent ?? '').replace(/\\s+/g, ' ').trim())`,
  count: `(selector) => (${deepAll})(selector).length`,
  visible: `(selector) => (${deepAll})(selector).some((e) => e.checkVisibility ? e.checkVisibility() : e.getClientRects().length > 0)`,
  first: `(selector) => (${deepAll})(selector)[0] ?? null`,
  // Whether the first match is where a click would land and stays there: its box the same 50 ms apart, and its centre
  // hitting it. Playwright checks this before a click; puppeteer (Firefox) does not, and a page that moves while a click
  // is on its way (a status line wrapping when the engine comes up) would have it land on whatever moved there.
  steady: `(selector) => new Promise((resolve) => { const el = (${deepAll})(selector)[0]; if (!el) return resolve(false); el.scrollIntoView({ block: 'nearest', inline: 'nearest' }); const a = el.getBoundingClientRect(); setTimeout(() => { const b = el.getBoundingClientRect(); const hit = el.getRootNode().elementFromPoint?.(b.x + b.width / 2, b.y + b.height / 2); resolve(a.x === b.x && a.y === b.y && a.width === b.width && a.height === b.height && b.width > 0 && !!hit && el.contains(hit)); }, 50); })`,
  fill: `([selector, text]) => { const el = (${deepAll})(selector)[0]; el.focus(); el.value = text; el.dispatchEvent(new Event('input', { bubbles: true })); }`,
};

type AnyPage = {
  evaluate(fn: string | ((arg: never) => unknown), arg?: unknown): Promise<unknown>;
  evaluateHandle(fn: string | ((arg: never) => unknown), arg?: unknown): Promise<PwHandle | FfHandle>;
};

/** Runs one of the inPage helpers (a function's source) with an argument. */
const call = <R>(page: AnyPage, source: string, arg: unknown) =>
  page.evaluate(`(${source})(${JSON.stringify(arg)})`) as Promise<R>;

/** The first element the selector matches, as the driver's handle (both drivers' handles click and press alike). */
async function element(
  page: AnyPage,
  selector: string,
): Promise<{ click(): Promise<unknown>; press(key: string): Promise<unknown> }> {
  const handle = (await page.evaluateHandle(`(${inPage.first})(${JSON.stringify(selector)})`)) as {
    asElement(): unknown;
  };
  const el = handle.asElement() as PwElement | FfElement | null;
  if (!el) throw new Error(`no element matches ${selector}`);
  return el as unknown as { click(): Promise<unknown>; press(key: string): Promise<unknown> };
}

function commonTab(page: AnyPage) {
  return {
    texts: (selector: string) => call<string[]>(page, inPage.texts, selector),
    count: (selector: string) => call<number>(page, inPage.count, selector),
    visible: (selector: string) => call<boolean>(page, inPage.visible, selector),
    fill: (selector: string, text: string) => call<void>(page, inPage.fill, [selector, text]),
    async click(selector: string) {
      // Until it is steady, for up to 10 s; then the click goes ahead and the driver says what is wrong, if anything.
      for (const end = Date.now() + 10_000; Date.now() < end; ) {
        if (await call<boolean>(page, inPage.steady, selector)) break;
      }
      await (await element(page, selector)).click();
    },
    press: async (selector: string, key: 'Enter' | 'Escape') => void (await (await element(page, selector)).press(key)),
  };
}

export function chromiumSite(context: BrowserContext, first: PwPage): Site {
  const scripts: Array<() => void> = [];
  let unused: PwPage | null = first;
  const wrap = (page: PwPage): Tab => ({
    browser: 'chromium',
    playwright: page,
    ...commonTab(page as unknown as AnyPage),
    goto: async (path) => void (await page.goto(path)),
    reload: async () => void (await page.reload()),
    close: () => page.close(),
    evaluate: (fn, arg) => page.evaluate(fn, arg as never),
    waitFor: async (fn, arg) => void (await page.waitForFunction(fn, arg as never, { timeout: 120_000 })),
    screenshot: async (path) => void (await page.screenshot({ path })),
  });
  return {
    browser: 'chromium',
    async tab(path) {
      const page = unused ?? (await context.newPage());
      unused = null;
      for (const fn of scripts) await page.addInitScript(fn);
      const tab = wrap(page);
      if (path) await tab.goto(path);
      return tab;
    },
    initScript: (fn) => void scripts.push(fn),
    offline: (on) => context.setOffline(on),
  };
}

export function firefoxSite(context: FfContext, baseURL: string): Site {
  const scripts: Array<() => void> = [];
  const pages: FfPage[] = [];
  let offline = false;
  const wrap = (page: FfPage): Tab => ({
    browser: 'firefox',
    playwright: null,
    ...commonTab(page as unknown as AnyPage),
    goto: async (path) => void (await page.goto(new URL(path, baseURL).href)),
    reload: async () => void (await page.reload()),
    close: () => page.close(),
    evaluate: (fn, arg) => page.evaluate(fn, arg as never) as never,
    waitFor: async (fn, arg) => void (await page.waitForFunction(fn, { timeout: 120_000 }, arg as never)),
    screenshot: async () => {}, // the README's pictures come from Chromium
  });
  return {
    browser: 'firefox',
    async tab(path) {
      const page = await context.newPage();
      page.setDefaultTimeout(120_000);
      if (process.env.HEARTH_DEBUG) page.on('console', (m) => console.log(`[firefox console] ${m.type()} ${m.text()}`));
      pages.push(page);
      for (const fn of scripts) await page.evaluateOnNewDocument(fn);
      if (offline) await page.setOfflineMode(true);
      const tab = wrap(page);
      if (path) await tab.goto(path);
      return tab;
    },
    initScript: (fn) => void scripts.push(fn),
    async offline(on) {
      offline = on;
      for (const page of pages) if (!page.isClosed()) await page.setOfflineMode(on);
    },
  };
}

/** The test server's log (vite.config.ts) from `since` on: what the browser fetched, workers' requests too, and
 * whether each went past the HTTP cache. */
export async function servedLog(baseURL: string, since = 0): Promise<Array<{ path: string; reload: boolean }>> {
  return ((await (await fetch(new URL('/__log', baseURL))).json()) as Array<{ path: string; reload: boolean }>).slice(
    since,
  );
}

/** The paths in the test server's log from `since` on. */
export const served = async (baseURL: string, since = 0) => (await servedLog(baseURL, since)).map((e) => e.path);

/** Counts the engine's workers each tab starts from now on (the engine worker, and the threads it starts, are its
 * page's own; the app's speed probe, app/probe-worker.ts, is not the engine); workersStarted(tab) says how many. */
export function countWorkers(site: Site) {
  site.initScript(() => {
    const Base = Worker;
    (window as unknown as { workersStarted: number }).workersStarted = 0;
    globalThis.Worker = class extends Base {
      constructor(...args: ConstructorParameters<typeof Worker>) {
        super(...args);
        if (!String(args[0]).includes('probe-worker'))
          (window as unknown as { workersStarted: number }).workersStarted++;
      }
    };
  });
}

export const workersStarted = (tab: Tab) =>
  tab.evaluate(() => (window as unknown as { workersStarted: number }).workersStarted);
