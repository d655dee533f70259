// npm run bench -- profile [--json] [--types q4_0,q4_k_m] [--simd plain]
// Where the time of a prompt and of decoding goes, by wasm function: Chromium's sampling profiler on the engine
// worker (CDP Profiler.start, through puppeteer-core, which reaches workers), Hearth's single-thread build with its
// function names kept (npm run build:wasm -- --profiling, made here on first use into .cache/profiling). One prefill of
// the decode benchmark's prompt (1 token generated), then 64 tokens after a short prompt, per type (default q8_0), on
// the benchmark model. Prints each phase's top functions by self time, and the share spent in matrix products (ggml's
// gemm/gemv/vec_dot kernels) and in quantizing activations; the JSON rows carry those shares per type and phase.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import puppeteer, { type Page, type WebWorker } from 'puppeteer-core';
import { createServer } from 'vite';
import { cacheDir, root } from '../../scripts/llama-source.mjs';
import { ensureModel, HUB_QUANTS } from '../../test/fixtures/models.ts';
import { PROMPT, round, type ScenarioOptions } from '../common.ts';
import { modelFor } from './quants.ts';

const profilingDir = join(cacheDir, 'profiling');
const N_CTX = 1024;

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  hitCount?: number;
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
}

/** Self samples per function name, most first. */
function selfTimes(profile: CpuProfile): Array<[string, number]> {
  const by = new Map<string, number>();
  for (const n of profile.nodes) {
    const name = n.callFrame.functionName || `(${n.callFrame.url.split('/').pop() || 'anonymous'})`;
    by.set(name, (by.get(name) ?? 0) + (n.hitCount ?? 0));
  }
  return [...by].sort((a, b) => b[1] - a[1]);
}

const MATMUL = /gemm|gemv|vec_dot|mul_mat/;
const QUANTIZE = /quantize/;

function ensureProfilingBuild(simd: 'auto' | 'plain') {
  const wasm = join(profilingDir, simd === 'plain' ? 'hearth-st.wasm' : 'hearth-st-relaxed.wasm');
  if (!existsSync(wasm)) execFileSync('node', [join(root, 'wasm/build.mjs'), '--profiling'], { stdio: 'inherit' });
  // The engine's worker script as the pages use it, beside the profiling builds (assetsUrl names one folder).
  // Without its source map comment: the map stays behind.
  writeFileSync(
    join(profilingDir, 'engine.worker.js'),
    readFileSync(join(root, 'public/hearth/engine.worker.js'), 'utf8').replace(/\n\/\/# sourceMappingURL=.*\s*$/, '\n'),
  );
}

export async function profile(opts: ScenarioOptions) {
  const simd = opts.simd ?? 'auto';
  const types = (opts.types ?? ['q8_0']) as Array<(typeof HUB_QUANTS)[number]>;
  const unknown = types.filter((t) => !HUB_QUANTS.includes(t));
  if (unknown.length) throw new Error(`--types: unknown ${unknown.join(', ')}; known: ${HUB_QUANTS.join(', ')}`);
  ensureProfilingBuild(simd);
  for (const type of types) await ensureModel(modelFor(type));
  const server = await createServer({
    server: { port: 0, host: '127.0.0.1', hmr: false, watch: null },
    logLevel: 'warn',
  });
  await server.listen();
  const address = server.httpServer!.address();
  const origin = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const rows: Array<Record<string, number>> = [];
  try {
    for (const type of types) {
      const page = await browser.newPage();
      const workers: WebWorker[] = [];
      page.on('workercreated', (w) => workers.push(w));
      await page.goto(`${origin}/bench/page.html`);
      await page.waitForFunction(() => (window as unknown as { benchReady?: boolean }).benchReady === true, {
        timeout: 120_000,
      });
      const info = await call(
        page,
        'loadHearth',
        `/test-models/${modelFor(type)}.gguf`,
        1,
        N_CTX,
        undefined,
        undefined,
        simd,
        '/.cache/profiling/',
      );
      const worker = workers.find((w) => w.url().includes('engine.worker'));
      if (!worker) throw new Error('the engine worker did not appear');
      opts.log(`${modelFor(type)}: ${info.build} build, 1 thread`);
      await call(page, 'runHearth', PROMPT, 2); // warm-up
      const phases = {
        prefill: () => call(page, 'runHearth', PROMPT, 1),
        decode: () => call(page, 'runHearth', [{ role: 'user', content: 'Hi' }], 64),
      };
      for (const [phase, run] of Object.entries(phases)) {
        await worker.client.send('Profiler.enable');
        await worker.client.send('Profiler.setSamplingInterval', { interval: 200 });
        await worker.client.send('Profiler.start');
        const r = await run();
        const { profile } = (await worker.client.send('Profiler.stop')) as unknown as { profile: CpuProfile };
        const times = selfTimes(profile);
        const total = times.reduce((s, [, n]) => s + n, 0);
        const share = (re: RegExp) =>
          round(times.filter(([f]) => re.test(f)).reduce((s, [, n]) => s + n, 0) / total, 3);
        opts.log(
          `  ${phase}: ${r.promptTokens} prompt tokens, ${r.genTokens} generated, ${Math.round((profile.endTime - profile.startTime) / 1000)} ms profiled; ` +
            `matrix products ${Math.round(share(MATMUL) * 100)}%, quantizing activations ${Math.round(share(QUANTIZE) * 100)}%`,
        );
        for (const [f, n] of times.slice(0, 20)) opts.log(`    ${((100 * n) / total).toFixed(1).padStart(5)}%  ${f}`);
        rows.push({
          type_index: HUB_QUANTS.indexOf(type),
          phase_decode: phase === 'decode' ? 1 : 0,
          matmul_share: share(MATMUL),
          quantize_share: share(QUANTIZE),
        });
      }
      await call(page, 'unload');
      await page.close();
    }
  } finally {
    await browser.close();
    await server.close();
  }
  return rows;
}

// biome-ignore lint/suspicious/noExplicitAny: each bench function of the page answers its own shape, read by its caller
function call(page: Page, name: string, ...args: unknown[]): Promise<any> {
  return page.evaluate(
    (n, a) => (window as unknown as { bench: Record<string, (...x: unknown[]) => unknown> }).bench[n]!(...a),
    name,
    args,
  );
}
