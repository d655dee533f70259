// npm install's last step (postinstall, after patch-package): @huggingface/jinja's dist/ built again from its
// TypeScript source, which patches/ edits (each jinja2 fix once, in the files upstream reviews, where a patch of the
// published dist/ made each change twice, in its ESM and its CommonJS build). Everything then imports the package as
// published — Vite's builds, Vitest, tsx, Playwright (which does not compile TypeScript inside node_modules) — and gets
// the patched renderer. Same shape as the published files: one ES module, one CommonJS file, the same exports.
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import { root } from './llama-source.mjs';

const dir = join(root, 'node_modules', '@huggingface', 'jinja');
for (const [format, file] of /** @type {const} */ ([
  ['esm', 'index.js'],
  ['cjs', 'index.cjs'],
])) {
  buildSync({
    entryPoints: [join(dir, 'src', 'index.ts')],
    outfile: join(dir, 'dist', file),
    bundle: true,
    format,
    platform: 'neutral',
    target: 'es2022',
    logLevel: 'warning',
  });
}
