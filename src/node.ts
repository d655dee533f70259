// Hearth in Node: the same engine as in the browser worker, over the same wasm, reading models from disk, behind the
// same public API (`import { createNodeEngine } from 'hearth-llm/node'`). The unit tests and benchmarks use it too.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EngineApi } from './api/engine-api.ts';
import { BackendRouter } from './api/router.ts';
import { engineCalls } from './api/services.ts';
import { llamacppBackend } from './backends/llamacpp/backend.ts';
import { checkCacheOptions, checkThreads } from './core/options.ts';
import { LlamaEngine, type LlamaEngineConfig } from './backends/llamacpp/llama-engine.ts';
import { type ModuleFactory, type ModuleLoader, stderrToLog } from './backends/llamacpp/binding/module.ts';
import { diskFiles, folderBackend } from './core/models/node-dir.ts';
import { splitNames } from './core/models/web-source.ts';
import { ModelStore } from './core/models/store.ts';
import type { ModelFile } from './core/models/file.ts';
import type { BuildVariant } from './types.ts';
import packaged from './core/packaged-assets.ts';

/**
 * The wasm builds: in the npm package, its widget/ folder (packaged-assets); in this repository, public/hearth; or the
 * folder HEARTH_WASM_DIR names (another build of the same engine: npm run test:sanitize's sanitizer builds).
 */
export const defaultWasmDir =
  process.env.HEARTH_WASM_DIR ||
  (packaged
    ? dirname(fileURLToPath(packaged['hearth-st.js']!))
    : join(dirname(fileURLToPath(import.meta.url)), '..', 'public', 'hearth'));

/** Loads the wasm build in Node (the browser's loader is backends/llamacpp/worker/load-module.ts). */
export function nodeModuleLoader(opts: { dir?: string; variant?: BuildVariant; threads?: number } = {}): ModuleLoader {
  // Absolute: require() reads a relative path as a package's name.
  const dir = resolve(opts.dir ?? defaultWasmDir);
  const variant = opts.variant ?? 'st';
  const threads = variant.startsWith('mt') ? Math.max(1, opts.threads ?? 1) : 1;
  const require = createRequire(import.meta.url);
  return {
    variant,
    // Node 20's V8 validates relaxed SIMD behind a flag but computes its 8-bit dot product wrongly: plain unless asked.
    reason: opts.variant ? `the ${variant} build, as asked` : 'the plain single-thread build, the default in Node',
    threads,
    async load() {
      // One glue per thread mode: a relaxed build's is its plain twin's (wasm/build.mjs drops the copy).
      const factory = require(join(dir, `hearth-${variant.replace(/-relaxed$/, '')}.js`)) as ModuleFactory;
      // Handing over the bytes keeps emscripten from fetch()ing a file path, which Node's fetch rejects.
      const wasmBinary = readFileSync(join(dir, `hearth-${variant}.wasm`));
      // HEARTH_WASM_STDERR: everything the module writes to stderr also goes to the process's (a sanitizer's report).
      const echo = process.env.HEARTH_WASM_STDERR ? (text: string) => process.stderr.write(`${text}\n`) : undefined;
      return factory(stderrToLog({ wasmBinary, hearthPoolSize: Math.max(1, threads - 1), print: () => {} }, echo));
    },
  };
}

/** A model file on disk — for a split model, its first part (the others are found beside it by name). */
export async function openPath(path: string): Promise<ModelFile> {
  const names = splitNames(basename(path));
  return diskFiles(dirname(path), names.length > 1 ? names : [basename(path)]);
}

/** The public API over the llama.cpp engine in this process, through the router as on a page (so its load options
 * are checked and its info() reads the same). `engine`: the engine itself. */
export class NodeEngine extends EngineApi {
  constructor(readonly engine: LlamaEngine) {
    const router = new BackendRouter([llamacppBackend(engine)], {
      requested: 'wasm',
      reason: 'Node runs the WebAssembly engine',
      adapter: null,
      selfTest: null,
    });
    // terminate() frees the model and the module's heap: a threaded build's workers are ended, which would
    // otherwise keep the heap until the process exits.
    super({ calls: engineCalls(router, engine), terminate: () => engine.terminate() });
  }
}

export interface NodeEngineOptions extends Partial<Omit<LlamaEngineConfig, 'loader' | 'models'>> {
  wasmDir?: string;
  variant?: BuildVariant;
  threads?: number;
  /** Where URL and { hf } models are kept. Default ~/.cache/hearth/models; null: downloaded into memory each time. */
  modelsDir?: string | null;
}

export const defaultModelsDir = () => join(homedir(), '.cache', 'hearth', 'models');

export async function createNodeEngine(opts: NodeEngineOptions = {}): Promise<NodeEngine> {
  checkThreads(opts.threads);
  checkCacheOptions(opts.cache);
  const loader = nodeModuleLoader({ dir: opts.wasmDir, variant: opts.variant, threads: opts.threads });
  const modelsDir = opts.modelsDir === undefined ? defaultModelsDir() : opts.modelsDir;
  const models = modelsDir === null ? null : new ModelStore(folderBackend(modelsDir));
  const engine = new LlamaEngine({ ...opts, loader, models, openPath: opts.openPath ?? openPath });
  await engine.init();
  return new NodeEngine(engine);
}
