// npm run build:widget — bundles <hearth-chat> (src/widget/hearth-chat.ts) into dist/widget/hearth-chat.js, an ES
// module a page adds with one script tag, and checks its size: every script a visitor's browser loads for the widget
// (on the page, then on the first open, with the default wasm backend) must stay within 60 kB gzipped; the e2e test
// checks this list against what the browser really fetched. The worker and the wasm are the engine's, in
// dist/hearth/, and not counted; what the GPU engine's start adds (for visitors whose adapter may run it), what a
// site that names wllama adds, and what the `images` attribute adds (the attach/paste/drop UI and thumbnails,
// src/widget/images.ts), are reported apart.
// The npm package builds the same widget into its widget/ folder, beside the engine's files (build-package.mjs).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'vite';
import { buildDefine } from './build-id.mjs';
import { root } from './llama-source.mjs';

const LIMIT = 60 * 1024;

/** Builds the widget into `outDir`; `ownAssets`: where it finds the engine's files, relative to itself. */
export async function buildWidget({ outDir = join(root, 'dist/widget'), ownAssets = '../hearth/' } = {}) {
  const result = await build({
    configFile: false,
    root,
    logLevel: 'warn',
    define: { ...buildDefine(), __HEARTH_WIDGET_ASSETS__: JSON.stringify(ownAssets) },
    build: {
      lib: { entry: join(root, 'src/widget/hearth-chat.ts'), formats: ['es'], fileName: () => 'hearth-chat.js' },
      outDir,
      emptyOutDir: true,
      target: 'es2022',
      copyPublicDir: false,
      rollupOptions: { output: { chunkFileNames: 'chunks/[name]-[hash].js' } },
    },
  });
  // Not watching, and one output format: one output.
  const output = /** @type {import('vite').Rolldown.RolldownOutput} */ (Array.isArray(result) ? result[0] : result);
  const chunks = output.output.filter((o) => o.type === 'chunk');
  const byName = new Map(chunks.map((c) => [c.fileName, c]));
  /** @param {string} name */
  const chunk = (name) => {
    const c = byName.get(name);
    if (!c) throw new Error(`[build:widget] no chunk ${name} in the bundle`);
    return c;
  };
  /** @param {string} name */
  const gz = (name) => gzipSync(chunk(name).code, { level: 9 }).length;
  /**
   * The chunks these load, with everything they import statically (loaded with them).
   * @param {string[]} names
   */
  const closure = (names) => {
    /** @type {Set<string>} */
    const seen = new Set();
    /** @param {string} name */
    const visit = (name) => {
      if (seen.has(name)) return;
      seen.add(name);
      chunk(name).imports.forEach(visit);
    };
    names.forEach(visit);
    return [...seen];
  };
  /** @param {string[]} names */
  const total = (names) => names.reduce((n, name) => n + gz(name), 0);

  // On the page: the entry and its static imports. On the first open, what the widget imports then (Markdown, the
  // engine client) with theirs: everything a visitor's browser loads when the engine runs on the CPU. The GPU engine's
  // start (its self-test) comes on top for visitors whose adapter may run it; wllama (every dynamic import of the
  // engine client) only for sites that name it; the images chunk for those with the attribute.
  const entry = chunk('hearth-chat.js');
  /** @param {string} name */
  const isImages = (name) => chunk(name).facadeModuleId?.endsWith('src/widget/images.ts');
  const onPage = closure(['hearth-chat.js']);
  const onOpen = closure(['hearth-chat.js', ...entry.dynamicImports.filter((n) => !isImages(n))]);
  const withImages = closure([...onOpen, ...entry.dynamicImports.filter(isImages)]);
  /** @param {string} name */
  const isGpuEngine = (name) => chunk(name).facadeModuleId?.endsWith('src/api/gpu-engine.ts');
  const dynamic = onOpen.flatMap((n) => chunk(n).dynamicImports);
  const withGpuEngine = closure([...onOpen, ...dynamic.filter(isGpuEngine)]);
  const withWebgpu = closure([...onOpen, ...dynamic]);
  const report = {
    on_page_gzip_bytes: total(onPage),
    gzip_bytes: total(onOpen),
    gpu_engine_extra_gzip_bytes: total(withGpuEngine) - total(onOpen),
    webgpu_extra_gzip_bytes: total(withWebgpu) - total(onOpen),
    images_extra_gzip_bytes: total(withImages) - total(onOpen),
    limit: LIMIT,
    files: Object.fromEntries(onOpen.map((n) => [n, gz(n)])),
  };
  writeFileSync(join(outDir, 'size.json'), JSON.stringify(report, null, 2));
  console.log(
    `[build:widget] ${join(outDir, 'hearth-chat.js')}: ${(report.on_page_gzip_bytes / 1024).toFixed(1)} kB gzipped on the page, ` +
      `${(report.gzip_bytes / 1024).toFixed(1)} kB once opened (limit ${LIMIT / 1024} kB; the worker and wasm not counted; ` +
      `${(report.gpu_engine_extra_gzip_bytes / 1024).toFixed(1)} kB more where the GPU engine starts, ` +
      `${(report.webgpu_extra_gzip_bytes / 1024).toFixed(1)} kB more with wllama and a fallback server, ` +
      `${(report.images_extra_gzip_bytes / 1024).toFixed(1)} kB more with images)`,
  );
  if (report.gzip_bytes > LIMIT) {
    console.error(
      `[build:widget] the widget's JS loaded on open is ${report.gzip_bytes} bytes gzipped, over the ${LIMIT}-byte budget`,
    );
    process.exit(1);
  }
  return report;
}

if (import.meta.url === `file://${process.argv[1]}`) await buildWidget();
