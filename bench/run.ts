// npm run bench -- <scenario> [--json] [--reps N] [--threads 1,2] [--types q4_0,iq4_xs] [--simd plain]
// Prints a readable report; with --json, one JSON object per line, the last one being the summary the scenario's
// issue asks for (e.g. decode: the 2-thread row).
import type { ScenarioOptions } from './common.ts';
import { batch } from './scenarios/batch.ts';
import { decode } from './scenarios/decode.ts';
import { grammar } from './scenarios/grammar.ts';
import { kernels } from './scenarios/kernels.ts';
import { kv } from './scenarios/kv.ts';
import { profile } from './scenarios/profile.ts';
import { quants } from './scenarios/quants.ts';
import { resume } from './scenarios/resume.ts';
import { returnVisit } from './scenarios/return.ts';
import { swa } from './scenarios/swa.ts';
import { vision } from './scenarios/vision.ts';

const scenarios: Record<string, (o: ScenarioOptions) => Promise<Array<Record<string, number>>>> = {
  decode,
  resume,
  return: returnVisit,
  kv,
  batch,
  quants,
  swa,
  grammar,
  profile,
  kernels,
  vision,
};

const args = process.argv.slice(2);
const name = args.find((a) => !a.startsWith('--') && !/^\d[\d,]*$/.test(a));
const flag = (f: string) => {
  const i = args.indexOf(f);
  return i >= 0 ? args[i + 1] : undefined;
};
if (!name || !scenarios[name]) {
  console.error(
    `usage: npm run bench -- <${Object.keys(scenarios).join('|')}> [--json] [--reps N] [--threads 1,2] [--types q4_0,iq4_xs] [--simd plain]`,
  );
  process.exit(2);
}
const json = args.includes('--json');
const opts: ScenarioOptions = {
  json,
  reps: Math.max(1, Number(flag('--reps') ?? 3)),
  threads: flag('--threads')?.split(',').map(Number) ?? null,
  types: flag('--types')?.split(',') ?? null,
  simd: flag('--simd') === 'plain' ? 'plain' : null,
  log: (line) => (json ? console.error(line) : console.log(line)),
};
const rows = await scenarios[name]!(opts);
if (json) for (const row of rows) console.log(JSON.stringify(row));
process.exit(0);
