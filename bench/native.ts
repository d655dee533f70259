// Native llama.cpp (node-llama-cpp from tools/llama, CPU, its prebuilt binary for this platform) on the same model
// and prompt text, timed like the browser engines: from the call to the first generated token, then to the last.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { toolsDir } from '../scripts/llama-source.mjs';
import type { Llama, LlamaContext, LlamaModel } from '../tools/llama/node_modules/node-llama-cpp/dist/index.js';
import type { RunResult } from './timed-chat.ts';

type NodeLlamaCpp = typeof import('../tools/llama/node_modules/node-llama-cpp/dist/index.js');

const packageDir = join(toolsDir, 'node_modules', 'node-llama-cpp');

/**
 * node-llama-cpp without its prebuilt binaries is what `npm ci` installs (they are ~700 MB, mostly GPU builds);
 * the benchmark needs just the CPU one for this platform, so it fetches that one on first use.
 */
async function loadNodeLlamaCpp(): Promise<NodeLlamaCpp> {
  const pkg = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
  const os = { linux: 'linux', darwin: 'mac', win32: 'win' }[process.platform as string] ?? process.platform;
  const prefix = `@node-llama-cpp/${os}-${process.arch}`;
  const names = Object.keys(pkg.optionalDependencies ?? {}).filter((n) => n.startsWith(prefix));
  const name = names.find((n) => n === prefix) ?? names[0];
  if (!name) {
    throw new Error(`node-llama-cpp ${pkg.version} has no prebuilt binary for ${process.platform}-${process.arch}`);
  }
  if (!existsSync(join(toolsDir, 'node_modules', name))) {
    console.error(`[bench] installing ${name}@${pkg.optionalDependencies[name]} (native llama.cpp for the comparison)`);
    execFileSync(
      'npm',
      [
        'install',
        '--prefix',
        toolsDir,
        '--no-save',
        '--omit=optional',
        '--ignore-scripts',
        '--no-audit',
        '--no-fund',
        '--loglevel=error',
        `${name}@${pkg.optionalDependencies[name]}`,
      ],
      { stdio: 'inherit' },
    );
  }
  return import(pathToFileURL(join(packageDir, 'dist', 'index.js')).href);
}

export class NativeRunner {
  private constructor(
    private llama: Llama,
    private model: LlamaModel,
    private context: LlamaContext,
  ) {}

  static async load(path: string, threads: number, nCtx: number): Promise<NativeRunner> {
    // maxThreads 0: `threads` is then exactly the number used, not a hint.
    const { getLlama } = await loadNodeLlamaCpp();
    const llama = await getLlama({ gpu: false, build: 'never', maxThreads: 0, logLevel: 'error' as never });
    const model = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
    const context = await model.createContext({ contextSize: nCtx, batchSize: 512, threads, sequences: 1 });
    return new NativeRunner(llama, model, context);
  }

  async run(prompt: string, maxTokens: number): Promise<RunResult> {
    const tokens = this.model.tokenize(prompt, true);
    const sequence = this.context.getSequence();
    try {
      const t0 = performance.now();
      let tFirst = 0;
      let tLast = 0;
      let n = 0;
      for await (const _ of sequence.evaluate(tokens, { temperature: 0 })) {
        if (!tFirst) tFirst = performance.now();
        tLast = performance.now();
        if (++n >= maxTokens) break;
      }
      return { promptTokens: tokens.length, genTokens: n, ttftMs: tFirst - t0, decodeMs: tLast - tFirst };
    } finally {
      sequence.dispose();
    }
  }

  get version(): string {
    return this.llama.llamaCppRelease.release;
  }

  async dispose() {
    await this.context.dispose();
    await this.model.dispose();
    await this.llama.dispose();
  }
}
