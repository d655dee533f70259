// Before the unit tests: the wasm build must exist (npm run build:wasm) and the test models are generated.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { defaultWasmDir } from '../src/node.ts';
import { ensureModel } from './fixtures/models.ts';
import { ensureMultimodal } from './fixtures/projectors.ts';

export default async function setup() {
  for (const variant of ['st', 'mt', 'st-relaxed', 'mt-relaxed']) {
    if (!existsSync(join(defaultWasmDir, `hearth-${variant}.wasm`))) {
      throw new Error(`public/hearth/hearth-${variant}.wasm is missing: run "npm run build:wasm" first`);
    }
  }
  const models = [
    'qwen2-tiny',
    'qwen2-hello',
    'qwen2-tool',
    'qwen2-hello-q8',
    'qwen3-tiny',
    'qwen3-embed',
    'qwen3-rerank',
    'llama3-tiny',
    'llama3-hello',
    'spm-notemplate',
    'mamba-tiny',
    'mamba-hello',
    'qwen35-tiny',
    'qwen35-hello',
    'gemma3-tiny',
    'gemma3-hello',
    'qwen2-hello-256-q4_0',
    'qwen2-hello-256-q4_k_m',
    'qwen2-hello-256-q5_k_m',
    'qwen2-hello-256-q6_k',
    'qwen2-hello-256-iq4_xs',
    'qwen2-hello-256-q8_0',
    'qwen2-hello-256-iq4_nl',
    'qwen2-hello-256-iq3_s',
    'qwen2-hello-256-q5_0',
    'qwen2-hello-256-q5_1',
  ] as const;
  for (const name of models) await ensureModel(name);
  for (const name of ['gemma3-vision', 'smolvlm-vision', 'qwen2a-audio'] as const) await ensureMultimodal(name);
}
