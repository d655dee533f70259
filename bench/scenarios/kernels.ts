// npm run bench -- kernels [--json] [--types q4_K,q8_0]
// ggml's matrix product per quantization type on the benchmark model's shapes, one thread: wasm/kernels-bench.cpp as
// built beside Hearth's relaxed and plain single-thread builds, run in Chromium, against the same program built
// natively (-march=native, host cmake and C++ compiler, into .cache/native-kernels) from the same patched llama.cpp.
// Per type, shape ("up": 896 -> 4864, "down": 4864 -> 896) and activation rows (1: a decode step, 4: four streams, 128:
// a prompt): multiply-adds per nanosecond in each, and the wasm builds' ratios to native. --types takes ggml's type
// names. The JSON rows are per (type, shape, rows); the last line holds every relaxed/native ratio.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir, llamaSource, patchedSource, root } from '../../scripts/llama-source.mjs';
import { openBenchPage } from '../browser.ts';
import { round, type ScenarioOptions } from '../common.ts';

interface Result {
  type: string;
  shape: string;
  rows: number;
  repacked: number;
  ms: number;
  macs_per_ns: number;
}
interface Report {
  relaxed: number;
  results: Result[];
}

const SHAPES = ['up', 'down'];
const TYPES = ['q8_0', 'q4_0', 'q5_0', 'q5_1', 'iq4_nl', 'q4_K', 'q5_K', 'q6_K', 'iq4_xs'];

function wasmProgram(build: string): string {
  const path = join(cacheDir, 'wasm-build', build, 'kernels-bench.cjs');
  // npm run build:wasm leaves it out (no test needs it); this links it beside that build, which is up to date.
  if (!existsSync(path)) {
    execFileSync(process.execPath, [join(root, 'wasm', 'build.mjs'), build, '--kernels-bench'], { stdio: 'inherit' });
  }
  return readFileSync(path, 'utf8');
}

/** The benchmark compiled for this machine from the same patched source, with the host's cmake and compiler. */
function nativeProgram(): string {
  const dir = join(cacheDir, 'native-kernels');
  const source = patchedSource(llamaSource());
  mkdirSync(dir, { recursive: true });
  execFileSync(
    'cmake',
    [
      '-S',
      join(root, 'wasm'),
      '-B',
      dir,
      '-DCMAKE_BUILD_TYPE=Release',
      '-DHEARTH_NATIVE_KERNELS_BENCH=ON',
      `-DLLAMA_CPP_DIR=${source.dir}`,
      '-DGGML_NATIVE=ON',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  execFileSync('cmake', ['--build', dir, '--target', 'kernels-bench', '--', `-j2`], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return join(dir, 'kernels-bench');
}

// Runs an emscripten program in the page; a plain emscripten program reads the global Module, and its one line of
// output is the report. Kept as text (called with its argument inlined): tsx would wrap a function literal in helpers
// (__name) the page does not have.
const RUN_PROGRAM = `({ source, args }) => new Promise((resolve, reject) => {
  Object.assign(globalThis, { Module: { arguments: args, print: resolve, printErr: () => {}, onAbort: reject } });
  addEventListener('error', (e) => reject(e.error ?? new Error(e.message)));
  (0, eval)(source);
})`;

export async function kernels(opts: ScenarioOptions) {
  const types = opts.types ?? TYPES;
  const native = nativeProgram();
  const reports: Record<string, Report> = {};
  for (const build of ['hearth-st-relaxed', 'hearth-st']) {
    opts.log(`running ${build}'s kernel benchmark in Chromium…`);
    // A page per program: a second emscripten program in the same page hangs, as the first one's runtime stays.
    const b = await openBenchPage();
    try {
      reports[build] = JSON.parse(
        await b.page.evaluate<string>(
          `(${RUN_PROGRAM})(${JSON.stringify({ source: wasmProgram(build), args: types })})`,
        ),
      ) as Report;
    } finally {
      await b.close();
    }
  }
  opts.log('running the native build…');
  reports.native = JSON.parse(execFileSync(native, types, { encoding: 'utf8' })) as Report;

  const rows: Array<Record<string, number>> = [];
  const summary: Record<string, number> = {};
  const find = (r: Report, x: Result) =>
    r.results.find((y) => y.type === x.type && y.shape === x.shape && y.rows === x.rows);
  opts.log('type     shape rows  relaxed MAC/ns (repacked)  plain  native   relaxed/native  plain/native');
  for (const x of reports['hearth-st-relaxed']!.results) {
    const plain = find(reports['hearth-st']!, x);
    const nat = find(reports.native, x);
    const ratio = (a?: Result) => (a && nat && nat.macs_per_ns > 0 ? round(a.macs_per_ns / nat.macs_per_ns) : 0);
    opts.log(
      `${x.type.padEnd(8)} ${x.shape.padEnd(5)} ${String(x.rows).padStart(4)}  ${x.macs_per_ns.toFixed(2).padStart(8)} (${x.repacked ? 'yes' : 'no '})` +
        `          ${(plain?.macs_per_ns ?? 0).toFixed(2).padStart(6)} ${(nat?.macs_per_ns ?? 0).toFixed(2).padStart(6)}   ${ratio(x).toFixed(2).padStart(8)}  ${ratio(plain).toFixed(2).padStart(12)}`,
    );
    rows.push({
      type_index: TYPES.indexOf(x.type),
      shape_index: SHAPES.indexOf(x.shape),
      rows: x.rows,
      relaxed_repacked: x.repacked,
      relaxed_macs_per_ns: x.macs_per_ns,
      plain_macs_per_ns: plain?.macs_per_ns ?? 0,
      native_macs_per_ns: nat?.macs_per_ns ?? 0,
      relaxed_vs_native: ratio(x),
      plain_vs_native: ratio(plain),
    });
    summary[`${x.type}_${x.shape}_${x.rows}_relaxed_vs_native`] = ratio(x);
  }
  return [...rows, summary];
}
