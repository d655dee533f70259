// WebKit for the API specs: Debian's WebKitGTK MiniBrowser driven through WebKitWebDriver (plain W3C WebDriver, no
// request interception) under a virtual X display (Xvfb). Each test gets a browser of its own (a new session: fresh
// storage). What HarnessPage needs of it is small: navigate, run a function in the page, wait for a condition.
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';

const MINIBROWSER = process.env.MINIBROWSER_PATH ?? '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';

/** A free TCP port on this machine. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
      .listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      })
      .on('error', reject);
  });
}

async function waitFor(check: () => Promise<boolean>, what: string, ms = 15_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what} did not start within ${ms / 1000} s`);
}

/** The driver process (and the X display it needs when there is none): one per test worker. */
export class WebKitDriver {
  private constructor(
    private readonly url: string,
    private readonly processes: ChildProcess[],
  ) {}

  static async start(): Promise<WebKitDriver> {
    const processes: ChildProcess[] = [];
    const env = { ...process.env };
    if (!env.DISPLAY) {
      // A display number of our own: :1xx, free when its lock file is absent.
      const display = `:${100 + (process.pid % 800)}`;
      processes.push(spawn('Xvfb', [display, '-screen', '0', '1280x1024x24', '-nolisten', 'tcp'], { stdio: 'ignore' }));
      env.DISPLAY = display;
    }
    const port = await freePort();
    processes.push(spawn('WebKitWebDriver', [`--port=${port}`], { env, stdio: 'ignore' }));
    const driver = new WebKitDriver(`http://127.0.0.1:${port}`, processes);
    await waitFor(async () => (await driver.request('GET', '/status')).ready === true, 'WebKitWebDriver');
    return driver;
  }

  async request(method: string, path: string, body?: unknown): Promise<{ [k: string]: unknown }> {
    const res = await fetch(this.url + path, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as { value: { error?: string; message?: string } & Record<string, unknown> };
    if (json.value?.error) throw new Error(`WebDriver ${path}: ${json.value.error}: ${json.value.message}`);
    return json.value;
  }

  /** A new browser window of its own (a new MiniBrowser: empty storage). */
  async session(): Promise<WebKitSession> {
    const value = await this.request('POST', '/session', {
      capabilities: {
        alwaysMatch: {
          browserName: 'MiniBrowser',
          'webkitgtk:browserOptions': { binary: MINIBROWSER, args: ['--automation'] },
        },
      },
    });
    const session = new WebKitSession(this, value.sessionId as string);
    await this.request('POST', `/session/${session.id}/timeouts`, { script: 180_000, pageLoad: 120_000 });
    return session;
  }

  stop() {
    for (const p of this.processes.reverse()) p.kill();
  }
}

export class WebKitSession {
  constructor(
    private readonly driver: WebKitDriver,
    readonly id: string,
  ) {}

  goto(url: string) {
    return this.driver.request('POST', `/session/${this.id}/url`, { url });
  }

  reload() {
    return this.driver.request('POST', `/session/${this.id}/refresh`, {});
  }

  /** Runs `fn` (its source) with `arg` in the page; resolves with its JSON result, rejects with its error's message. */
  async evaluate<R>(fn: string, arg: unknown): Promise<R> {
    const script = `const done = arguments[arguments.length - 1];
      Promise.resolve().then(() => (${fn})(arguments[0])).then(
        (value) => done({ ok: true, value: value === undefined ? null : value }),
        (e) => done({ ok: false, message: e && e.message !== undefined ? String(e.message) : String(e), name: e && e.name,
          details: e && e.details ? JSON.stringify(e.details) : undefined }));`;
    const result = (await this.driver.request('POST', `/session/${this.id}/execute/async`, {
      script,
      args: [arg ?? null],
    })) as { ok: boolean; value?: R; message?: string; name?: string; details?: string };
    // A HearthError's details go with it: without DevTools, they are all a rare failure leaves behind.
    if (!result.ok) {
      throw new Error(`${result.name ?? 'Error'}: ${result.message}${result.details ? ` ${result.details}` : ''}`);
    }
    return result.value as R;
  }

  /** A click at (x, y) of the viewport through WebDriver's actions: the browser's own input events, so the page gets
   * a user activation. */
  async tap(x: number, y: number): Promise<void> {
    const pointer = {
      type: 'pointer',
      id: 'mouse',
      parameters: { pointerType: 'mouse' },
      actions: [
        { type: 'pointerMove', x, y, origin: 'viewport' },
        { type: 'pointerDown', button: 0 },
        { type: 'pointerUp', button: 0 },
      ],
    };
    await this.driver.request('POST', `/session/${this.id}/actions`, { actions: [pointer] });
  }

  close() {
    return this.driver.request('DELETE', `/session/${this.id}`).catch(() => {});
  }
}
