// createEngine's and load()'s options, checked once, the same whichever backend takes them: a value that makes no
// sense is an InvalidRequestError 'invalid_parameter' that names the option (details.param) and says what it takes,
// never a silent clamp. What depends on the model (nCtx against its training context) is checkContextSize, called by
// each backend once it has read the model.
import { InvalidRequestError, invalidParameter as badOption } from '../errors.ts';
import type { CacheOptions, EngineOptions, GgmlType, LoadOptions } from '../types.ts';
import { noDraftModel, resolveSpeculative } from './speculative.ts';
import { MAX_PARALLEL, MAX_THREADS, MIN_CTX } from './limits.ts';

export const KV_TYPES: readonly GgmlType[] = ['f32', 'f16', 'q8_0', 'q4_0'];

const show = (v: unknown) => (typeof v === 'bigint' ? `${v}n` : (JSON.stringify(v) ?? String(v)));

function integer(param: string, v: unknown, min: number, max: number): void {
  if (v === undefined) return;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    badOption(param, `expected an integer from ${min} to ${max}, got ${show(v)}`);
  }
}

function positive(param: string, v: unknown): void {
  if (v === undefined) return;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    badOption(param, `expected a positive number of bytes, got ${show(v)}`);
  }
}

function oneOf<T>(param: string, v: unknown, allowed: readonly T[]): void {
  if (v === undefined || allowed.includes(v as T)) return;
  badOption(param, `expected ${allowed.map((a) => JSON.stringify(a)).join(', ')}; got ${show(v)}`);
}

function flag(param: string, v: unknown): void {
  if (v !== undefined && typeof v !== 'boolean') badOption(param, `expected true or false, got ${show(v)}`);
}

/** EngineOptions.threads (and Node's). */
export function checkThreads(threads: unknown): void {
  integer('threads', threads, 1, MAX_THREADS);
}

/** createEngine's options: what may be checked before anything starts (a server's address: backends/server/remote-options.ts).
 */
export function checkEngineOptions(o: EngineOptions): {
  backend: NonNullable<EngineOptions['backend']>;
  shared: string | null;
} {
  if (!o || typeof o !== 'object') badOption('options', 'expected an object');
  const backend = o.backend ?? 'auto';
  if ((typeof backend !== 'object' || backend === null) && !['auto', 'wasm', 'webgpu', 'wllama'].includes(backend)) {
    badOption(
      'backend',
      `expected "auto", "wasm", "webgpu", "wllama" or { remote: { baseURL, model } }, got ${show(backend)}`,
    );
  }
  checkThreads(o.threads);
  oneOf('simd', o.simd, ['auto', 'plain']);
  positive('maxModelBytes', o.maxModelBytes);
  checkCacheOptions(o.cache);
  const { shared } = o;
  if (shared !== undefined && shared !== false && shared !== true && (typeof shared !== 'string' || !shared)) {
    badOption('shared', `expected true or a non-empty name, got ${show(shared)}`);
  }
  return { backend, shared: shared === true ? 'default' : shared || null };
}

/** EngineOptions.cache (and Node's). */
export function checkCacheOptions(c: CacheOptions | undefined): void {
  if (c === undefined) return;
  if (!c || typeof c !== 'object') {
    badOption(
      'cache',
      'expected { persistent?, systemPrompt?, conversations?, minTokens?, budgetBytes?, chunkBytes? }',
    );
  }
  flag('cache.persistent', c.persistent);
  flag('cache.systemPrompt', c.systemPrompt);
  flag('cache.conversations', c.conversations);
  integer('cache.minTokens', c.minTokens, 1, 2 ** 31);
  positive('cache.budgetBytes', c.budgetBytes);
  positive('cache.chunkBytes', c.chunkBytes);
}

/** load()'s options, as the router gets them (the page's, Node's, another tab's). */
export function checkLoadOptions(o: Omit<LoadOptions, 'signal' | 'onProgress'>): void {
  if (!o || typeof o !== 'object') badOption('options', 'expected an object');
  integer('nCtx', o.nCtx, MIN_CTX, 2 ** 24);
  integer('nParallel', o.nParallel, 1, MAX_PARALLEL);
  positive('kvBudgetBytes', o.kvBudgetBytes);
  oneOf('cacheTypeK', o.cacheTypeK, KV_TYPES);
  oneOf('cacheTypeV', o.cacheTypeV, KV_TYPES);
  flag('allowScalarKernels', o.allowScalarKernels);
  flag('allowUnverified', o.allowUnverified);
  flag('store', o.store);
  flag('swaFull', o.swaFull);
  integer('gpuLayers', o.gpuLayers, 0, 2 ** 31);
  const speculative = o.speculative === undefined ? null : resolveSpeculative(o.speculative, 'speculative');
  // Refused here, not at every request after a load that seemed to work.
  if (speculative?.kind === 'draft' && o.draft == null) noDraftModel('speculative');
  const state = o.promptState;
  if (state !== undefined && typeof state !== 'string' && !(typeof Blob !== 'undefined' && state instanceof Blob)) {
    badOption('promptState', 'expected the URL of a prompt state file, or the file as a Blob');
  }
}

/** An explicit nCtx against the model's training context (nCtxTrain 0: the model does not say). */
export function checkContextSize(nCtx: number | undefined, nCtxTrain: number): void {
  if (nCtx === undefined || nCtxTrain <= 0 || nCtx <= nCtxTrain) return;
  throw new InvalidRequestError(
    `nCtx: this model was trained on ${nCtxTrain} tokens of context, and answers past that are ` +
      `garbage: use nCtx ${nCtxTrain} or less, or leave it out (the context then grows with demand)`,
    'invalid_parameter',
    { param: 'nCtx', nCtxTrain },
  );
}
