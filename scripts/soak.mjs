// npm run soak [-- --turns N] [-- --seed S]: e2e/soak.spec.ts in Chromium with N turns (default 1,000; CI runs 60 as
// part of the e2e suite). Needs what the e2e tests need built (npm run build:wasm, build, build:e2e).
import { spawnSync } from 'node:child_process';

/** @type {(name: string, fallback: string) => string} */
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  const value = process.argv[i + 1];
  return i > 0 && value ? value : fallback;
};
const turns = Number(arg('turns', '1000'));
if (!Number.isSafeInteger(turns) || turns < 4) {
  console.error('[soak] --turns takes a whole number of at least 4');
  process.exit(2);
}
const run = spawnSync(
  'npx',
  ['playwright', 'test', '--project=chromium-plain', 'e2e/soak.spec.ts', '--reporter=line'],
  {
    stdio: 'inherit',
    env: { ...process.env, HEARTH_SOAK_TURNS: String(turns), HEARTH_SOAK_SEED: arg('seed', '41') },
  },
);
process.exit(run.status ?? 1);
