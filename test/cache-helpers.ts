// Engines with and without the KV cache, over IndexedDB databases of their own (fake-indexeddb in Node: the same
// idb-keyval code paths as in the browser, minus the browser).
import 'fake-indexeddb/auto';
import { afterAll } from 'vitest';
import { createStore, type UseStore } from 'idb-keyval';
import type { Engine } from '../src/engine/engine.ts';
import { LlamaContext } from '../src/engine/llama/binding.ts';
import { KvStore } from '../src/engine/cache/store.ts';
import { resolveRequest } from '../src/engine/request.ts';
import { createNodeEngine } from '../src/node.ts';
import type { CacheOptions, ChatCompletion, ChatMessage } from '../src/types.ts';
import type { ModelName } from './fixtures/models.ts';
import { modelPath } from './helpers.ts';

let dbCounter = 0;
export const newDb = () => `hearth-test-${process.pid}-${++dbCounter}`;

export interface CachedEngineOptions extends CacheOptions {
  /** IndexedDB database name; null: no persistence. */
  db: string | null;
  /** Wraps the idb-keyval store, e.g. to make writes fail. */
  wrap?: (store: UseStore) => UseStore;
  nCtx?: number;
}

export async function cachedEngine(model: ModelName, opts: CachedEngineOptions): Promise<Engine> {
  const { db, wrap, nCtx, ...cache } = opts;
  const idb = db === null ? null : createStore(db, 'records');
  const kvStore = idb ? new KvStore(wrap ? wrap(idb) : idb, cache.budgetBytes ?? 2 ** 30) : null;
  const engine = await createNodeEngine({ cache: { minTokens: 32, ...cache }, kvStore });
  await engine.load({ path: modelPath(model) }, { nCtx: nCtx ?? 2048 });
  return engine;
}

/** An engine that caches nothing: every request decodes its whole prompt in one batch. */
export function coldEngine(model: ModelName): Promise<Engine> {
  return cachedEngine(model, { db: null, persistent: false, conversations: false, systemPrompt: false });
}

/** The raw idb-keyval store behind a test database, to inspect or damage records. */
export const rawStore = (db: string) => createStore(db, 'records');

export { SYSTEM } from './helpers.ts';

export async function ask(engine: Engine, messages: ChatMessage[], extra: { conversation_id?: string; max_tokens?: number } = {}):
  Promise<ChatCompletion> {
  return engine.chat.completions.create({ messages, temperature: 0, max_tokens: extra.max_tokens ?? 8, ...extra, stream: false });
}

export const reply = (r: ChatCompletion) => r.choices[0]!.message.content!;

export const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i]!)), 0);
export const argmax = (a: Float32Array) => a.reduce((best, v, i) => (v > a[best]! ? i : best), 0);

/**
 * Next-token logits of `tokens` decoded from scratch in a fresh context of the engine's model, in batches that end
 * at `cuts`. Measures llama.cpp's batch-split noise for this model and prompt.
 */
export function splitLogits(engine: Engine, tokens: ArrayLike<number>, cuts: number[]): Float32Array {
  const { model, ctx: engineCtx } = (engine as unknown as { loaded: { model: ConstructorParameters<typeof LlamaContext>[0]; ctx: LlamaContext } }).loaded;
  // The engine's own KV types and attention kernel, one sequence.
  const ctx = new LlamaContext(model, { ...engineCtx.params, nSeqMax: 1 });
  try {
    const ends = [...cuts.filter((c) => c > 0 && c < tokens.length), tokens.length];
    let start = 0;
    let last = 0;
    for (const end of ends) {
      const part = Array.from({ length: end - start }, (_, k) => tokens[start + k]!);
      const status = ctx.decode(part, part.map((_, k) => start + k), part.map(() => 0), part.map((_, k) => k === part.length - 1));
      if (status !== 0) throw new Error(`decode failed: ${status}`);
      last = part.length - 1;
      start = end;
    }
    return ctx.logits(last);
  } finally {
    ctx.free();
  }
}

// The engine's private prompt rendering and system-prefix detection, reached the way the tests need them.
type Rendered = { prompt: string; addSpecial: boolean; tokens: Int32Array };
interface EngineInternals {
  loaded: unknown;
  renderPrompt(l: unknown, req: { messages: ChatMessage[]; tools: undefined }): Rendered;
  systemLength(l: unknown, req: unknown, prompt: string, tokens: Int32Array, addSpecial: boolean): number;
  systemPrefix(l: unknown, n: number, tokens: Int32Array): { tokens: Int32Array } | null;
}

/** Length of the system prefix the engine would cache for these messages (0 if none). */
export function systemPrefixLength(engine: Engine, messages: ChatMessage[]): number {
  const e = engine as unknown as EngineInternals;
  const { prompt, tokens, addSpecial } = e.renderPrompt(e.loaded, { messages, tools: undefined });
  const n = e.systemLength(e.loaded, resolveRequest({ messages }), prompt, tokens, addSpecial);
  return e.systemPrefix(e.loaded, n, tokens)?.tokens.length ?? 0;
}

/** The engine's tokenization of a request's prompt (what the cache matches on). */
export function promptTokens(engine: Engine, messages: ChatMessage[]): Int32Array {
  const e = engine as unknown as EngineInternals;
  return e.renderPrompt(e.loaded, { messages, tools: undefined }).tokens;
}

/** Engines a test file creates, unloaded after its tests: `const track = trackEngines();` then `await track(…)`. */
export function trackEngines(): (p: Promise<Engine>) => Promise<Engine> {
  const engines: Engine[] = [];
  afterAll(async () => {
    for (const e of engines) await e.unload();
  });
  return async (p) => {
    const e = await p;
    engines.push(e);
    return e;
  };
}
