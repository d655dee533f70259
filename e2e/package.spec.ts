// The npm package in a browser, installed as users install it (test/package-project.ts: the packed tarball, npm, a
// fresh project): a Vite app that imports createEngine, built and served with the isolation headers (threaded build)
// and without (single-thread build), and a plain static page that uses nothing but the package's widget/ folder.
// Debian's Chromium, driven by Playwright directly (no harness page: these are the users' own pages).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { expect, type Page, test } from '@playwright/test';
import { modelPath } from '../test/helpers.ts';
import { freshProject, PACKAGE_NAME, projectsDir, stageDir } from '../test/package-project.ts';

const root = join(import.meta.dirname, '..');
const vite = join(root, 'node_modules', 'vite', 'bin', 'vite.js'); // the app's bundler (this repository's copy)
const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version as string;
const ports = { isolated: 4181, plain: 4182, static: 4183, dev: 4184, webpack: 4185 };
const WEBPACK = ['webpack@5.112.2', 'webpack-cli@7.3.1'];

// The app: one module that asks for an answer, and the isolation headers (ISOLATE=1) for Vite's servers.
const MAIN = `import { createEngine } from '${PACKAGE_NAME}';

window.answer = async (model, options) => {
  const engine = await createEngine(options);
  try {
    await engine.load(model);
    const r = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8, seed: 1 });
    const info = await engine.info();
    return { content: r.choices[0].message.content, tokens: r.usage.completion_tokens, build: info.build, version: info.version };
  } finally {
    engine.terminate();
  }
};
`;
const VITE_CONFIG = `const isolate = process.env.ISOLATE === '1';
const headers = isolate ? { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } : {};
export default { server: { headers }, preview: { headers } };
`;
const html = (script: string) =>
  '<!doctype html>\n<html><head><meta charset="utf-8"><title>An app</title></head>\n' +
  `<body><script type="module" src="${script}"></script></body></html>\n`;

const APP = { 'index.html': html('/main.js'), 'main.js': MAIN, 'vite.config.js': VITE_CONFIG };
// webpack 5 follows new URL(…, import.meta.url) as Vite does; its output is served by the same preview server.
const WEBPACK_APP = {
  'src/main.js': MAIN,
  'vite.config.js': VITE_CONFIG,
  'webpack.config.js':
    "export default { mode: 'production', entry: './src/main.js', output: { path: new URL('./dist', import.meta.url).pathname, clean: true } };\n",
};
const STATIC_PAGE =
  '<!doctype html>\n<html><head><meta charset="utf-8"><title>A site</title></head><body>\n' +
  '<hearth-chat model="/models/qwen2-tiny.gguf" chat-title="Ask us"></hearth-chat>\n' +
  '<script type="module" src="/widget/hearth-chat.js"></script>\n</body></html>\n';

const servers: ChildProcess[] = [];

/** `vite preview` of `outDir` (or with none, Vite's dev server) on `port`, resolved once it answers. */
async function serve(cwd: string, outDir: string | null, port: number, env: Record<string, string> = {}) {
  const args = outDir === null ? [] : ['preview', '--outDir', outDir];
  const server = spawn(process.execPath, [vite, ...args, '--port', String(port), '--strictPort'], {
    cwd,
    env: { ...process.env, ...env },
    stdio: 'ignore',
  });
  servers.push(server);
  for (let i = 0; i < 100; i++) {
    if (
      await fetch(`http://localhost:${port}/`).then(
        () => true,
        () => false,
      )
    ) {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`vite preview on port ${port} did not start`);
}

/** The model, served beside a site (a hard link: no copy of the bytes). */
function addModel(dir: string) {
  mkdirSync(join(dir, 'models'), { recursive: true });
  linkSync(modelPath('qwen2-tiny'), join(dir, 'models', 'qwen2-tiny.gguf'));
}

/** Every path the page and its workers requested from `origin`, and those that failed (a status of 400 or more). */
function requests(page: Page, origin: string): { paths: string[]; failed: string[] } {
  const seen = { paths: [] as string[], failed: [] as string[] };
  page.context().on('request', (r) => {
    if (r.url().startsWith(origin)) seen.paths.push(new URL(r.url()).pathname);
  });
  page.context().on('response', (r) => {
    if (r.status() >= 400) seen.failed.push(`${r.status()} ${r.url()}`);
  });
  return seen;
}

/** Asks the app (main.js) for an answer on two threads (the default is half the cores: one on a 2-core machine). */
const answer = (page: Page) =>
  page.evaluate(
    (m) =>
      (window as unknown as { answer(m: string, o: object): Promise<Record<string, unknown>> }).answer(m, {
        threads: 2,
      }),
    '/models/qwen2-tiny.gguf',
  );

test.describe.configure({ mode: 'serial' });

test.beforeAll(async () => {
  test.setTimeout(300_000);
  const app = freshProject('vite-app', APP);
  execFileSync(process.execPath, [vite, 'build', '--logLevel', 'warn'], { cwd: app, stdio: 'pipe' });
  addModel(join(app, 'dist'));
  await serve(app, 'dist', ports.isolated, { ISOLATE: '1' });
  await serve(app, 'dist', ports.plain);
  addModel(join(app, 'public')); // for the dev server
  await serve(app, null, ports.dev, { ISOLATE: '1' });
  const webpackApp = freshProject('webpack-app', WEBPACK_APP, WEBPACK);
  execFileSync(process.execPath, [join(webpackApp, 'node_modules', 'webpack-cli', 'bin', 'cli.js')], {
    cwd: webpackApp,
    stdio: 'pipe',
  });
  writeFileSync(join(webpackApp, 'dist', 'index.html'), html('/main.js'));
  addModel(join(webpackApp, 'dist'));
  await serve(webpackApp, 'dist', ports.webpack, { ISOLATE: '1' });
  // The static site: a page and the package's widget/ folder copied as-is (here from the app's install).
  const site = join(projectsDir, 'static-site');
  rmSync(site, { recursive: true, force: true });
  cpSync(join(app, 'node_modules', PACKAGE_NAME, 'widget'), join(site, 'widget'), { recursive: true });
  writeFileSync(join(site, 'index.html'), STATIC_PAGE);
  addModel(site);
  await serve(site, '.', ports.static);
});

test.afterAll(() => {
  for (const s of servers) s.kill();
});

test("a Vite app bundles the package: its build holds the engine's files under hashed names, no copy step", () => {
  const assets = readdirSync(join(viteDist, 'assets'));
  for (const file of [
    'engine.worker',
    'hearth-st',
    'hearth-st-relaxed',
    'hearth-mt',
    'hearth-mt-relaxed',
    'hearth-webgpu',
    'wllama',
  ]) {
    expect(
      assets.some((a) => a.startsWith(`${file}-`)),
      `${file} in dist/assets: ${assets.join(', ')}`,
    ).toBe(true);
  }
  expect(assets.filter((a) => a.endsWith('.wasm')).length).toBe(6);
});

// Each app chats; threads where the page is cross-origin isolated (two asked for: a plain page gets one whatever it
// asks).
const viteDist = join(projectsDir, 'vite-app', 'dist');
// Chromium validates relaxed SIMD: the relaxed builds, each one wasm file beside its plain twin's glue.
const APPS = [
  {
    app: "the Vite app's build on a cross-origin isolated page",
    port: ports.isolated,
    build: 'mt-relaxed',
    dist: viteDist,
  },
  { app: "the Vite app's build on a plain page", port: ports.plain, build: 'st-relaxed', dist: viteDist },
  {
    app: "the Vite app on Vite's dev server (only the isolation headers configured)",
    port: ports.dev,
    build: 'mt-relaxed',
    dist: null,
  },
  {
    app: "a webpack 5 app's production build",
    port: ports.webpack,
    build: 'mt-relaxed',
    dist: join(projectsDir, 'webpack-app', 'dist'),
  },
] as const;

for (const { app, port, build, dist } of APPS) {
  const threaded = build.startsWith('mt');
  test(`${app} chats in Chromium on the ${threaded ? 'threaded' : 'single-thread'} build`, async ({ page }) => {
    const origin = `http://localhost:${port}`;
    const seen = requests(page, origin);
    await page.goto(`${origin}/`);
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(threaded);
    const result = await answer(page);
    expect(result).toMatchObject({ tokens: 8, build, version });
    expect(String(result.content).length).toBeGreaterThan(0);
    const wasm = seen.paths.filter((p) => p.endsWith('.wasm'));
    expect(wasm).toHaveLength(1);
    // A build serves the file from its own output, under a name its bundler gave it; the dev server from the package.
    if (dist) {
      expect(existsSync(join(dist, wasm[0]!)) && statSync(join(dist, wasm[0]!)).size).toBe(
        statSync(join(stageDir, 'widget', `hearth-${build}.wasm`)).size,
      );
      expect(wasm[0]).not.toContain(`hearth-${build}.wasm`);
    } else {
      expect(wasm[0]).toMatch(new RegExp(`/node_modules/${PACKAGE_NAME}/widget/hearth-${build}\\.wasm$`));
    }
    expect(seen.failed).toEqual([]);
  });
}

test('a static page with only the widget folder: one tag, and it answers', async ({ page }) => {
  const origin = `http://localhost:${ports.static}`;
  const seen = requests(page, origin);
  await page.goto(`${origin}/`);
  const text = await page.evaluate(() =>
    (document.querySelector('hearth-chat') as HTMLElement & { send(t: string): Promise<string> }).send('Hello'),
  );
  expect(text.length).toBeGreaterThan(0);
  expect(seen.paths.filter((p) => !/^\/(widget\/|models\/|$)/.test(p))).toEqual([]);
  expect(seen.paths).toContain('/widget/hearth-st-relaxed.wasm'); // beside the single-thread glue, hearth-st.js
  expect(seen.failed).toEqual([]);
});
