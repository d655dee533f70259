import { defineConfig } from '@playwright/test';
import type { EngineBackend, EngineBrowser, EngineSimd } from './e2e/fixtures.ts';

// E2E tests against the built site (vite preview), served twice: with COOP/COEP (cross-origin isolated: threaded
// wasm) and without (single-thread wasm). Debian's Chromium through Playwright, Debian's firefox-esr through
// puppeteer-core (e2e/fixtures.ts). Never a downloaded browser.
const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const chromiumArgs = [
  '--no-sandbox',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const servers = { isolated: 'http://localhost:4173', plain: 'http://localhost:4174' };

// Two tiers. `npm test` (CI: 90 minutes on a 2-core machine, where the builds take a third) runs every spec in every
// browser it is meant for, once, and in the other browsers and engines what is theirs. `npm run test:e2e:full`
// (HEARTH_E2E_FULL=1) adds the repeats that test the same code on slower ground: determinism in Firefox and WebKit
// (Chromium's runs all four CPU builds); the app's screens in Firefox (its model store and shared tabs stay); the demo
// on the plain page; on each browser's other page, engine.spec past choosing the build and a first answer; in Firefox
// the widget's behaviour (its CSP, Trusted Types and hostile-output tests stay); in WebKit the shipped prompt states
// (its reloads and a cleared site stay); on the GPU engine in Firefox what the engine does the same on either engine
// (choosing, streaming, shipped states, fresh engines: its reloads, a lost worker, batching, determinism and its own
// spec stay); and on SwiftShader the GPU engine's every-architecture, every-quantization and cross-engine comparisons
// and its determinism (the f32 path runs all of them in Node, test/webgpu/equivalence.test.ts; Chromium's WebGPU
// keeps its probe and 'auto').
const full = process.env.HEARTH_E2E_FULL === '1';
/** `npm run test:large`: the model past 4 GiB in Firefox's GPU engine and on its CPU engine, moved to the memory64 build
 * (e2e/large.spec.ts): minutes each, nothing else. */
const large = process.env.HEARTH_LARGE === '1';
/** A project's grepInvert: the test titles (patterns) it never runs, and those it leaves to the full tier. */
const leaveOut = (always: string[], toFullTier: string[] = []) => {
  const titles = [...always, ...(full ? [] : toFullTier)];
  return titles.length ? new RegExp(titles.join('|')) : undefined;
};
// The prompt states shipped to a fresh engine (exported in the page, and the widget host page's written in Node).
const shippedStates = ['shipped to a fresh engine', 'widget host page'];

// The API specs in full once per browser and per build: Chromium on the isolated page (the threaded build), Firefox on
// the plain one (the single-thread build); on its other page each browser runs engine.spec (load, stream, abort,
// errors, batching), so both builds run in both browsers. The rest of the API specs (the cache, media, tools and
// schema) do the same work on either build, and two more runs of them cost CI minutes without telling more. The model
// store, the app (service worker, offline) and the engine shared by tabs do not depend on threads: their specs run on
// the isolated page. The widget is for ordinary sites: the plain page.
const apiSpecs = /\/(engine|cache|chat-features|media)\.spec\.ts$/;
const engineSpec = /\/engine\.spec\.ts$/;
const storeSpecs = /(models|app|app-chat|catalogue|shared)\.spec\.ts$/;
const appSpecs = /\/(app|app-chat|catalogue)\.spec\.ts$/;
const widgetSpec = /widget\.spec\.ts$/;
// The demo page (index.html as the first screen of the app): Chromium, both pages.
const demoSpec = /demo\.spec\.ts$/;
// The relaxed-SIMD kernels against ggml's reference: the browsers that have relaxed SIMD, once each.
const kernelsSpec = /kernels\.spec\.ts$/;
// The remote backend against llama-server on 127.0.0.1 (npm run build:server): threads play no part, the plain page;
// Chromium's only, as what it tests is fetch and the server (its hostile cases run in Node: test/quick/remote-hostile.test.ts).
const remoteSpec = /remote\.spec\.ts$/;
// The same cold request many times on every build a page runs: Chromium's isolated page (all four CPU builds), Firefox's
// plain one (the two single-thread builds: the threaded ones run the same C in Chromium, and each browser's own part is
// its wasm compiler, which the single-thread builds exercise), WebKit's one build; the last two in the full tier.
const determinismSpec = /determinism\.spec\.ts$/;
// The soak (widgets and the API on one shared engine, many turns): Chromium's plain page, where the widget runs.
const soakSpec = /soak\.spec\.ts$/;
// The Prompt API (its web-platform-tests, and a session kept across a reload): every browser, on the plain page (an
// ordinary site, as the polyfill's users).
const promptApiSpecs = /prompt-api(-wpt)?\.spec\.ts$/;
// engine.spec's tests past choosing the build and a first answer (the full tier's on a browser's other page).
const engineSpecPastFirstAnswer = [
  'stalls while starting',
  'a worker that ends mid-answer',
  'streams OpenAI chunks',
  'streams several requests at once',
  'bad model sources',
  'huggingface\\.co',
];
// The widget's behaviour apart from the page's policies and hostile output (the full tier's in Firefox).
const widgetBehaviour = [
  '100 turns',
  'two tabs on one conversation',
  'widgets with different models',
  'a new conversation, a stored record',
  'the size check counts',
  'images \\(the images attribute\\)',
  'images: a file that is not an image',
  'without the images attribute',
];
const fullApi: Record<EngineBrowser, keyof typeof servers> = {
  chromium: 'isolated',
  firefox: 'plain',
  webkit: 'plain',
};

const project = (browser: EngineBrowser, isolation: keyof typeof servers) => ({
  name: `${browser}-${isolation}`,
  testMatch: large
    ? browser === 'firefox' && isolation === 'isolated'
      ? [/\/large\.spec\.ts$/]
      : []
    : [
        fullApi[browser] === isolation ? apiSpecs : engineSpec,
        ...(isolation === 'isolated'
          ? [storeSpecs]
          : [widgetSpec, kernelsSpec, promptApiSpecs, ...(browser === 'chromium' ? [remoteSpec] : [])]),
        ...((browser === 'chromium') === (isolation === 'isolated') && (full || browser === 'chromium')
          ? [determinismSpec]
          : []),
        ...(browser === 'chromium' && (full || isolation === 'isolated') ? [demoSpec] : []),
        ...(browser === 'chromium' && isolation === 'plain' ? [soakSpec] : []),
      ],
  testIgnore: browser === 'firefox' && !full ? [appSpecs] : [],
  grepInvert: leaveOut(
    [],
    fullApi[browser] !== isolation ? engineSpecPastFirstAnswer : browser === 'firefox' ? widgetBehaviour : [],
  ),
  use: { baseURL: servers[isolation], isolated: isolation === 'isolated', engineBrowser: browser },
});

// The GPU engine's projects (one browser with shader-f16, one without) run the API specs, less what runs before the
// engine computes or on storage alone (firefox-webgpu says which and why), and the GPU engine's own spec.
const gpuSpecs = large ? [/large\.spec\.ts$/] : [apiSpecs, determinismSpec, /gpu-engine\.spec\.ts$/];
const gpuGrepInvert = leaveOut(
  [
    'bad model sources',
    'huggingface\\.co',
    'stalls while starting',
    'without a projector',
    'page reload without reading it again.*\\((qwen2|gemma3)-hello\\)',
    'shipped to a fresh engine.*\\(mamba-hello\\)',
    'audio: read once',
    // storage, not the GPU: the CPU engine's projects run it
    "site's storage cleared",
    // what the engine does above llama.cpp, the same on either engine (tools, schema, logprobs, embeddings: the GPU
    // engine's answers are checked against the CPU engine's in Node and in gpu-engine.spec), and an image, which the
    // GPU engine reads in Node (test/webgpu/engine.test.ts)
    'tool calls, structured output',
    'image: read once',
  ],
  // the full tier's (above): what the engine does the same on either engine
  ['chooses the build', 'loads with progress', 'streams OpenAI chunks', ...shippedStates, 'a fresh engine each time'],
);
const swiftshader = ['--enable-unsafe-webgpu', '--use-webgpu-adapter=swiftshader', '--enable-unsafe-swiftshader'];

export default defineConfig<
  { isolated: boolean; backend: EngineBackend; simd: EngineSimd; adapterF16: boolean },
  { engineBrowser: EngineBrowser; firefoxPrefs: Record<string, unknown> }
>({
  testDir: 'e2e',
  globalSetup: './e2e/global-setup.ts',
  timeout: 180_000,
  expect: { timeout: 60_000 },
  workers: 1, // the engine's threads need the machine's cores
  outputDir: '.cache/playwright',
  // CI counts results from the JSON file (.ci/run).
  reporter: process.env.CI ? [['list'], ['json', { outputFile: '.cache/reports/e2e.json' }]] : [['list']],
  use: {
    trace: 'retain-on-failure',
    launchOptions: {
      executablePath: chromium,
      args: chromiumArgs,
    },
  },
  projects: [
    project('chromium', 'isolated'),
    project('chromium', 'plain'),
    project('firefox', 'isolated'),
    project('firefox', 'plain'),
    // WebKit (WebKitGTK's MiniBrowser, e2e/webkit.ts) has no SharedArrayBuffer even when isolated: the API specs, once.
    // The reload test on attention and recurrent state: WebKit's part is its IndexedDB, the same for every
    // architecture (the hybrid and sliding-window models' reloads run in Chromium and Firefox). Left out too: what
    // the engine does above llama.cpp, the same in every browser (tools, schema, logprobs, embeddings), and the audio
    // clip (WebKit's part of an image, its decoder, runs).
    {
      name: 'webkit-plain',
      testMatch: full ? [apiSpecs, determinismSpec, promptApiSpecs] : [apiSpecs, promptApiSpecs],
      grepInvert: leaveOut(
        [
          'page reload without reading it again.*\\((qwen35|gemma3)-hello\\)',
          'tool calls, structured output',
          'audio: read once',
        ],
        shippedStates,
      ),
      use: { baseURL: servers.plain, isolated: false, engineBrowser: 'webkit' },
    },
    // The npm package installed from its tarball into fresh projects (a Vite app, a static site), in Chromium.
    { name: 'package', testMatch: /package\.spec\.ts$/ },
    // The API tests on Hearth's GPU engine (backend 'webgpu'): Firefox ESR's WebGPU, a real adapter with shader-f16
    // (Mesa's lavapipe, Vulkan on the CPU, through wgpu), turned on by the two prefs. Its own spec checks the choice,
    // the self-test and what survives a reload. Every engine start compiles the GPU's pipelines on the CPU (3–4× a
    // CPU engine's test time, and CI has 90 minutes): left out are the tests of what the page does before the engine
    // computes (model sources, { hf }, a start that stalls, a model without a projector), two reloads (qwen2-hello:
    // gpu-engine.spec's does the same; gemma3-hello, 66 s), mamba's shipped state (qwen2-hello's runs) and the audio
    // clip (on the GPU engine in Node: test/webgpu/engine.test.ts).
    {
      name: 'firefox-webgpu',
      testMatch: gpuSpecs,
      grepInvert: gpuGrepInvert,
      use: {
        baseURL: servers.plain,
        isolated: false,
        engineBrowser: 'firefox',
        firefoxPrefs: { 'dom.webgpu.enabled': true, 'gfx.webgpu.ignore-blocklist': true },
        backend: 'webgpu',
      },
    },
    // The same tests in Chromium's WebGPU over SwiftShader (Vulkan on the CPU), an adapter without shader-f16: the GPU
    // engine's shaders compute in f32 over f16 data packed in 32-bit words (wasm/patches/0018). SwiftShader runs a
    // workgroup's invocations four at a time, each group a coroutine where the shader has a barrier: the test models'
    // output product (151,936 rows of 64) took 16 s a token until patch 0019 sized its workgroup to the row (0.4 s).
    // Only the GPU engine's own spec here (and determinism in the full tier): the API specs test what the engine does
    // above llama.cpp, the same code on either shader path (firefox-webgpu runs them on a GPU in a browser, and a
    // conversation's state crossing between the engines is in gpu-engine.spec), and on SwiftShader they took 7.7 of
    // CI's minutes.
    {
      name: 'chromium-webgpu',
      testMatch: full ? [determinismSpec, /gpu-engine\.spec\.ts$/] : [/gpu-engine\.spec\.ts$/],
      grepInvert: leaveOut(
        [],
        ['every fixture architecture', 'every quantization type', 'resumes after a reload on the CPU'],
      ),
      use: {
        baseURL: servers.plain,
        isolated: false,
        engineBrowser: 'chromium',
        backend: 'webgpu',
        adapterF16: false,
        launchOptions: { executablePath: chromium, args: [...chromiumArgs, ...swiftshader] },
      },
    },
    // Backend 'wllama' (@wllama/wllama) on a real WebGPU adapter: Chromium's SwiftShader (Vulkan on the CPU), a
    // fallback adapter without shader-f16, on a secure origin (localhost): its self-test, its answers, its refusals.
    {
      name: 'chromium-wllama',
      testMatch: /wllama\.spec\.ts$/,
      use: {
        // Its CPU engine (the self-test's reference, the fallback) on the plain SIMD128 build: the one project that
        // runs the threaded plain build (WebKit runs the single-thread one).
        baseURL: servers.isolated,
        isolated: true,
        engineBrowser: 'chromium',
        backend: 'wllama',
        simd: 'plain',
        launchOptions: {
          executablePath: chromium,
          args: [...chromiumArgs, ...swiftshader],
        },
      },
    },
  ],
  webServer: [
    // HEARTH_TEST_HUB: the app's catalogue asks the test Hub (e2e/test-hub.ts) for sizes, and offers the test model.
    {
      command: 'npx vite preview --port 4173 --strictPort',
      port: 4173,
      reuseExistingServer: !process.env.CI,
      env: { HEARTH_TEST_HUB: '1' },
    },
    {
      command: 'npx vite preview --port 4174 --strictPort',
      port: 4174,
      reuseExistingServer: !process.env.CI,
      env: { HEARTH_ISOLATION: 'off', HEARTH_TEST_HUB: '1' },
    },
  ],
});
