// Totals of the Vitest and Playwright JSON reports, printed as the last line "N passed, N failed".
// A missing report (its suite never ran, e.g. the build failed) counts as one failure.
import { existsSync, readFileSync } from 'node:fs';

let passed = 0;
let failed = 0;
for (const file of process.argv.slice(2)) {
  if (!existsSync(file)) {
    console.log(`${file}: missing (the suite did not run)`);
    failed++;
    continue;
  }
  const r = JSON.parse(readFileSync(file, 'utf8'));
  let [p, f] = r.stats
    ? [r.stats.expected + r.stats.flaky, r.stats.unexpected + (r.errors?.length ?? 0)] // Playwright
    : [r.numPassedTests, r.numFailedTests]; // Vitest
  if (r.success === false && f === 0) f = 1; // a test file that failed to load has no failed tests of its own
  console.log(`${file}: ${p} passed, ${f} failed`);
  passed += p;
  failed += f;
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
