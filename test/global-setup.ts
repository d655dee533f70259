// Before the unit tests: the wasm build must exist (npm run build:wasm) and the test models are generated.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { defaultWasmDir } from '../src/node.ts';
import { ensureModel } from './fixtures/models.ts';
import { ensureMultimodal, PROJECTORS } from './fixtures/projectors.ts';

export default async function setup() {
  for (const variant of ['st', 'mt', 'st-relaxed', 'mt-relaxed']) {
    if (!existsSync(join(defaultWasmDir, `hearth-${variant}.wasm`))) {
      throw new Error(`${join(defaultWasmDir, `hearth-${variant}.wasm`)} is missing: run "npm run build:wasm" first`);
    }
  }
  const models = [
    'qwen2-tiny',
    'qwen2-hello',
    'qwen2-hello-draft',
    'qwen2-tool',
    'qwen2-hello-q8',
    'qwen3-tiny',
    'qwen3-embed',
    'qwen3-rerank',
    'llama3-tiny',
    'llama3-hello',
    'llama3-hello-draft',
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
  const multimodal = ['gemma3-vision', 'smolvlm-vision', 'qwen25vl-vision', 'qwen3vl-vision', 'qwen2a-audio'] as const;
  // Made in two processes, one per core of a 2-core CI machine (each is single-threaded JS and wasm): the quantized
  // models (from one source model) in one, the rest in the other, so no file is written by both.
  const quantized = models.filter((m) => m.startsWith('qwen2-hello-256-'));
  const rest = models.filter((m) => !m.startsWith('qwen2-hello-256-'));
  const paired = multimodal.map((p) => PROJECTORS[p].model);
  await Promise.all([fixtures(quantized), fixtures([...rest, ...paired, ...multimodal])]);
  // Then in this process: each is found made (its stamp checked), or made here if a process above failed.
  for (const name of models) await ensureModel(name);
  for (const name of multimodal) await ensureMultimodal(name);
}

/** Runs `npm run fixtures -- ...names`' script in a child process; resolves when it exits, whatever its status. */
function fixtures(names: readonly string[]): Promise<void> {
  const cli = join(import.meta.dirname, 'fixtures', 'cli.ts');
  const child = spawn(process.execPath, ['--import', 'tsx', cli, ...names], { stdio: ['ignore', 'ignore', 'inherit'] });
  return new Promise((resolve) => child.on('exit', () => resolve()).on('error', () => resolve()));
}
