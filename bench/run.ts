// npm run bench -- <scenario> [--json] [--reps N] [--threads 1,2] [--types q4_0,iq4_xs] [--simd plain] [--node]
// [--model NAME] [--trace] [--large] [--long] [--engine cpu|gpu] [--same-engine] [--browser]
// Prints a readable report; with --json, one JSON object per line, the last one being the summary the scenario's
// issue asks for (e.g. decode: the 2-thread row).
import type { ScenarioOptions } from './common.ts';

type Scenario = (o: ScenarioOptions) => Promise<Array<Record<string, number>>>;
// Loaded when asked for: a scenario's browser or native tooling is imported only by the run that needs it (and the
// GPU machine's bundle of this file, scripts/device-bench.mjs, carries none of it).
const scenarios: Record<string, () => Promise<Scenario>> = {
  decode: async () => (await import('./scenarios/decode.ts')).decode,
  resume: async () => (await import('./scenarios/resume.ts')).resume,
  restore: async () => (await import('./scenarios/restore.ts')).restore,
  return: async () => (await import('./scenarios/return.ts')).returnVisit,
  kv: async () => (await import('./scenarios/kv.ts')).kv,
  batch: async () => (await import('./scenarios/batch.ts')).batch,
  quants: async () => (await import('./scenarios/quants.ts')).quants,
  swa: async () => (await import('./scenarios/swa.ts')).swa,
  grammar: async () => (await import('./scenarios/grammar.ts')).grammar,
  profile: async () => (await import('./scenarios/profile.ts')).profile,
  kernels: async () => (await import('./scenarios/kernels.ts')).kernels,
  vision: async () => (await import('./scenarios/vision.ts')).vision,
  webgpu: async () => (await import('./scenarios/webgpu.ts')).webgpu,
  memory64: async () => (await import('./scenarios/memory64.ts')).memory64,
  speculative: async () => (await import('./scenarios/speculative.ts')).speculative,
};

const args = process.argv.slice(2);
const name = args.find((a) => !a.startsWith('--') && !/^\d[\d,]*$/.test(a));
const flag = (f: string) => {
  const i = args.indexOf(f);
  return i >= 0 ? args[i + 1] : undefined;
};
if (!name || !scenarios[name]) {
  console.error(
    `usage: npm run bench -- <${Object.keys(scenarios).join('|')}> [--json] [--reps N] [--threads 1,2] [--types q4_0,iq4_xs] [--simd plain] [--node] [--model NAME] [--trace] [--large] [--long] [--engine cpu|gpu] [--same-engine] [--browser]`,
  );
  process.exit(2);
}
const json = args.includes('--json');
function engineFlag(value: string | undefined): ScenarioOptions['engine'] {
  if (value === undefined || value === 'cpu' || value === 'gpu') return value ?? null;
  console.error(`--engine takes cpu or gpu, not ${value}`);
  process.exit(2);
}
const opts: ScenarioOptions = {
  json,
  reps: Math.max(1, Number(flag('--reps') ?? 3)),
  threads: flag('--threads')?.split(',').map(Number) ?? null,
  types: flag('--types')?.split(',') ?? null,
  simd: flag('--simd') === 'plain' ? 'plain' : null,
  node: args.includes('--node'),
  model: flag('--model') ?? null,
  trace: args.includes('--trace'),
  large: args.includes('--large'),
  long: args.includes('--long'),
  engine: engineFlag(flag('--engine')),
  sameEngine: args.includes('--same-engine'),
  browser: args.includes('--browser'),
  log: (line) => (json ? console.error(line) : console.log(line)),
};
const rows = await (await scenarios[name]!())(opts);
if (json) for (const row of rows) console.log(JSON.stringify(row));
process.exit(0);
