// Before the e2e tests: the site must be built (npm run build) and the test models generated.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { GPU_ARCHITECTURES, GPU_QUANTS } from '../test/compare.ts';
import { ensureModel } from '../test/fixtures/models.ts';
import { ensureMultimodal } from '../test/fixtures/projectors.ts';
import { ensureWidgetHostState } from '../test/fixtures/prompt-states.ts';
import { tarball } from '../test/package-project.ts';

export default async function setup() {
  const root = join(import.meta.dirname, '..');
  for (const f of [
    'dist/index.html',
    'dist/hearth/engine.worker.js',
    'dist/hearth/hearth-mt.wasm',
    'dist/hearth/hearth-st.wasm',
    '.cache/e2e-dist/e2e/harness.html',
  ]) {
    if (!existsSync(join(root, f))) {
      throw new Error(`${f} is missing: run "npm run build:wasm && npm run build && npm run build:e2e" first`);
    }
  }
  tarball(); // the npm package (e2e/package.spec.ts), or an error that says how to build it
  const models = [
    'qwen2-hello',
    'qwen2-hello-draft',
    'qwen2-tool',
    'qwen2-tiny',
    'qwen3-tiny',
    'qwen3-embed',
    'qwen3-rerank',
    'mamba-hello',
    'qwen35-hello',
    'gemma3-hello',
    // the GPU engine's spec: every fixture architecture and quantization type
    ...GPU_ARCHITECTURES,
    ...GPU_QUANTS.map((q) => `qwen2-hello-256-${q}` as const),
  ] as const;
  for (const name of models) await ensureModel(name);
  for (const name of ['gemma3-vision', 'qwen25vl-vision', 'qwen2a-audio'] as const) await ensureMultimodal(name);
  // The widget's example host page ships its system prompt's state.
  await ensureWidgetHostState();
}
