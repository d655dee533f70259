// npm run build:widget — bundles <hearth-chat> (src/widget/hearth-chat.ts) into dist/widget/hearth-chat.js, an ES
// module a page adds with one script tag, and checks its size: what a visitor's browser loads for the widget on a
// page (before and after opening it, the wasm backend) must stay within 60 kB gzipped. The worker and the wasm are
// the engine's, in dist/hearth/, and not counted; neither is the chunk only backend 'webgpu' loads (wllama).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'vite';
import { root } from './llama-source.mjs';

const LIMIT = 60 * 1024;
const outDir = join(root, 'dist/widget');

const result = await build({
  configFile: false,
  root,
  logLevel: 'warn',
  build: {
    lib: { entry: join(root, 'src/widget/hearth-chat.ts'), formats: ['es'], fileName: () => 'hearth-chat.js' },
    outDir,
    emptyOutDir: true,
    target: 'es2022',
    copyPublicDir: false,
    rollupOptions: { output: { chunkFileNames: 'chunks/[name]-[hash].js' } },
  },
});
const chunks = (Array.isArray(result) ? result[0] : result).output.filter((o) => o.type === 'chunk');
const byName = new Map(chunks.map((c) => [c.fileName, c]));
const gz = (c) => gzipSync(c.code, { level: 9 }).length;
const webgpuOnly = (c) => Object.keys(c.modules).some((m) => m.includes('/webgpu/') || m.includes('@wllama'));

// What loads: the entry and what it imports; then on opening, the engine client and what it imports.
const loaded = new Set();
const visit = (name) => {
  const c = byName.get(name);
  if (!c || loaded.has(name) || webgpuOnly(c)) return;
  loaded.add(name);
  [...c.imports, ...c.dynamicImports].forEach(visit);
};
visit('hearth-chat.js');
const sizes = Object.fromEntries([...loaded].map((n) => [n, gz(byName.get(n))]));
const total = Object.values(sizes).reduce((a, b) => a + b, 0);
const onPage = gz(byName.get('hearth-chat.js')) + byName.get('hearth-chat.js').imports.reduce((n, i) => n + gz(byName.get(i)), 0);
writeFileSync(join(outDir, 'size.json'), JSON.stringify({ gzip_bytes: total, on_page_gzip_bytes: onPage, limit: LIMIT, files: sizes }, null, 2));
console.log(`[build:widget] dist/widget/hearth-chat.js: ${(onPage / 1024).toFixed(1)} kB gzipped on the page, ` +
  `${(total / 1024).toFixed(1)} kB once opened (limit ${LIMIT / 1024} kB; worker and wasm not counted)`);
if (total > LIMIT) {
  console.error(`[build:widget] the widget's JS is ${total} bytes gzipped, over the ${LIMIT}-byte budget`);
  process.exit(1);
}
