// npm run test:sanitize [-- address|undefined] [test files] — the unit tests (the kernel test among them) on sanitizer
// builds of the engine: AddressSanitizer (reads and writes out of bounds, use after free) and UndefinedBehaviorSanitizer
// (overflow, misaligned or null pointers, bad shifts and casts), each in the single-thread and the threaded builds,
// plain and relaxed SIMD. Both by default. Not part of npm test: each sanitizer's builds take 10 minutes on 2 cores and
// the suite runs far slower on them. A finding stops the engine's module, so the test that made it fails
// after the sanitizer's report (in the test's output, "ERROR: AddressSanitizer" or "runtime error:").
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { cacheDir, root } from './llama-source.mjs';

// Sanitizers named on the command line (both by default); any other argument is handed to vitest (test files).
const given = process.argv.slice(2);
/** @type {string[]} */
const named = given.filter((a) => a === 'address' || a === 'undefined');
const kinds = named.length ? named : ['address', 'undefined'];
const vitestArgs = given.filter((a) => !named.includes(a));
const failed = [];
for (const kind of kinds) {
  const t0 = Date.now();
  const build = spawnSync(process.execPath, [join(root, 'wasm', 'build.mjs'), '--sanitize', kind], {
    stdio: 'inherit',
  });
  if (build.status !== 0) process.exit(build.status ?? 1);
  const built = Date.now();
  const tests = spawnSync(
    process.execPath,
    // The instrumented code runs far slower where it allocates much (a grammar test: 240 s, not 1.2): a test gets five
    // times the usual time. One test file at a time: an instrumented module takes far more memory, and each test file starts several.
    [
      join(root, 'node_modules', 'vitest', 'vitest.mjs'),
      'run',
      '--testTimeout=600000',
      '--maxWorkers=1',
      ...vitestArgs,
    ],
    {
      stdio: 'inherit',
      env: { ...process.env, HEARTH_WASM_DIR: join(cacheDir, 'sanitize', kind), HEARTH_WASM_STDERR: '1' },
    },
  );
  console.log(
    `[sanitize] ${kind}: built in ${((built - t0) / 1000).toFixed(0)} s, unit tests ${tests.status === 0 ? 'passed' : 'FAILED'} in ${((Date.now() - built) / 1000).toFixed(0)} s`,
  );
  if (tests.status !== 0) failed.push(kind);
}
if (failed.length) {
  console.error(`[sanitize] findings or failures under: ${failed.join(', ')}`);
  process.exit(1);
}
