// Before the e2e tests: the site must be built (npm run build) and the test models generated.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ensureModel } from '../test/fixtures/models.ts';

export default async function setup() {
  const dist = join(import.meta.dirname, '..', 'dist');
  for (const f of ['index.html', 'e2e/harness.html', 'hearth/engine.worker.js', 'hearth/hearth-mt.wasm', 'hearth/hearth-st.wasm']) {
    if (!existsSync(join(dist, f))) throw new Error(`dist/${f} is missing: run "npm run build:wasm && npm run build" first`);
  }
  const models = ['qwen2-hello', 'qwen2-tiny', 'qwen3-tiny', 'qwen3-embed', 'qwen3-rerank', 'mamba-hello', 'qwen35-hello', 'gemma3-hello'] as const;
  for (const name of models) await ensureModel(name);
}
