// node scripts/together.mjs <npm script>... — runs npm scripts at the same time, each line of their output prefixed
// with the script's name; exits non-zero when any fails (the others are stopped then). npm test builds the wasm builds
// and the native llama-server together: both compile on every core, but each spends minutes on one core (links, CMake
// configuring, the build root's download) that the other fills.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const children = process.argv.slice(2).map((name) => {
  const child = spawn('npm', ['run', '--silent', name], { stdio: ['ignore', 'pipe', 'pipe'] });
  createInterface({ input: child.stdout }).on('line', (line) => process.stdout.write(`[${name}] ${line}\n`));
  createInterface({ input: child.stderr }).on('line', (line) => process.stderr.write(`[${name}] ${line}\n`));
  const ok = new Promise((resolve) =>
    child.on('close', (code, signal) => {
      if (code !== 0) {
        console.error(`[${name}] failed (${signal ?? `exit ${code}`})`);
        for (const other of children) if (other.child !== child) other.child.kill();
      }
      resolve(code === 0);
    }),
  );
  return { child, ok };
});
const results = await Promise.all(children.map((c) => c.ok));
process.exit(results.every(Boolean) ? 0 : 1);
