// Shared by the unit tests and the benchmarks: engines over the test models (one factory), the wasm module on its own,
// logits helpers, and the chat messages the tests send.
import { join } from 'node:path';
import { createStore, type UseStore } from 'idb-keyval';
import { afterAll, expect } from 'vitest';
import { KvStore } from '../src/backends/llamacpp/cache/kv-store.ts';
import { Llama } from '../src/backends/llamacpp/binding/llama.ts';
import { LlamaContext } from '../src/backends/llamacpp/binding/context.ts';
import { LlamaModel } from '../src/backends/llamacpp/binding/model.ts';
import { N_BATCH } from '../src/backends/llamacpp/binding/batch.ts';
import { TestHooks } from '../src/backends/llamacpp/test-hooks.ts';
import { createNodeEngine, nodeModuleLoader, type NodeEngine } from '../src/node.ts';
import type {
  BuildVariant,
  CacheOptions,
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParams,
  ChatMessage,
  EngineInfo,
  LoadOptions,
} from '../src/types.ts';
import { answerDiff, COMPARABLE, LOGPROB_TOLERANCE, PROMPT_EFFECT } from './compare.ts';
import { modelsDir, type ModelName } from './fixtures/models.ts';

export const modelPath = (name: ModelName) => join(modelsDir, `${name}.gguf`);

// --- engines -------------------------------------------------------------------------------------------------------

const inspectors = new WeakMap<NodeEngine, TestHooks>();

/** Seams into a Node engine (src/backends/llamacpp/test-hooks.ts): logits, prompts, slots, the scheduler's profile. */
export function inspect(engine: NodeEngine): TestHooks {
  let inspector = inspectors.get(engine);
  if (!inspector) inspectors.set(engine, (inspector = new TestHooks(engine.engine)));
  return inspector;
}

export interface TestEngineOptions extends CacheOptions, Omit<LoadOptions, 'signal' | 'onProgress'> {
  /** An IndexedDB database of the engine's own (in Node: import 'fake-indexeddb/auto' first). Without one, nothing
   * is saved. */
  db?: string;
  /** Wraps the database's idb-keyval store, e.g. to make writes fail. */
  wrap?: (store: UseStore) => UseStore;
  /** Load this file instead of the named model (a changed copy of it). */
  path?: string;
  /** The wasm build (default: Node's, the plain single-thread one); 'webgpu' needs Dawn (test/webgpu). */
  variant?: BuildVariant;
  /** The WebGPU build: false takes the f32 shader path (LlamaEngineConfig.shaderF16). */
  shaderF16?: boolean;
  /** The WebGPU build: false encodes every graph afresh (LlamaEngineConfig.gpuReplay). */
  gpuReplay?: boolean;
  /** llama.cpp's threads, in the pthreads builds ('mt', 'mt64'). Default 1. */
  threads?: number;
}

/** A Node engine with a test model loaded. Options are the engine's cache options and load() options, in one object. */
export async function testEngine(model: ModelName, opts: TestEngineOptions = {}): Promise<NodeEngine> {
  const {
    db,
    wrap,
    path,
    variant,
    shaderF16,
    gpuReplay,
    persistent,
    systemPrompt,
    conversations,
    minTokens,
    budgetBytes,
    chunkBytes,
    threads,
    ...load
  } = opts;
  const cache: CacheOptions = { persistent, systemPrompt, conversations, minTokens, budgetBytes, chunkBytes };
  const idb = db === undefined ? null : createStore(db, 'records');
  const kvStore = idb ? new KvStore(wrap ? wrap(idb) : idb, cache.budgetBytes ?? 2 ** 30) : null;
  const engine = await createNodeEngine({ cache, kvStore, variant, shaderF16, gpuReplay, threads });
  await engine.load({ path: path ?? modelPath(model) }, load);
  return engine;
}

/** Cache options that keep nothing: every request decodes its whole prompt. */
export const NO_CACHE: CacheOptions = { persistent: false, conversations: false, systemPrompt: false };

/** An engine that caches nothing, for comparisons with a cached one. */
export const coldEngine = (model: ModelName) => testEngine(model, { ...NO_CACHE, nCtx: 2048 });

/** The cache tests' engine: prefixes from 32 tokens are cached (the test prompts are short), a 2,048-token context. */
export const cachedEngine = (model: ModelName, opts: TestEngineOptions = {}) =>
  testEngine(model, { minTokens: 32, nCtx: 2048, ...opts });

/** Engines a test file creates, ended after its tests: `const track = trackEngines();` then `await track(…)`. */
export function trackEngines(): (p: Promise<NodeEngine>) => Promise<NodeEngine> {
  const engines: NodeEngine[] = [];
  afterAll(() => {
    for (const e of engines) e.terminate();
  });
  return async (p) => {
    const e = await p;
    engines.push(e);
    return e;
  };
}

let dbCounter = 0;
/** A fresh IndexedDB database name. */
export const newDb = () => `hearth-test-${process.pid}-${++dbCounter}`;

/** The raw idb-keyval store behind a test database, to inspect or damage records. */
export const rawStore = (db: string) => createStore(db, 'records');

/** The engine's tokenization of a request's prompt (what the cache matches on). */
export const promptTokens = (engine: NodeEngine, messages: ChatMessage[]) =>
  inspect(engine).prompt({ messages }).tokens;

/** Length of the system prefix the engine caches for these messages (0 if none). */
export const systemPrefixLength = (engine: NodeEngine, messages: ChatMessage[]) =>
  inspect(engine).prompt({ messages }).systemTokens;

// --- the wasm module on its own ------------------------------------------------------------------------------------

/** A fresh wasm module (the single-thread build unless `variant` says) with host folders mounted (NODEFS), by default
 * the test models at /models. */
export async function openLlama(
  mounts: Record<string, string> = { '/models': modelsDir },
  variant?: BuildVariant,
  opts: Parameters<typeof Llama.create>[1] = {},
): Promise<Llama> {
  const llama = await Llama.create(await nodeModuleLoader({ variant }).load(), opts);
  for (const [at, dir] of Object.entries(mounts)) {
    llama.mod.FS.mkdir(at);
    llama.mod.FS.mount(llama.mod.NODEFS, { root: dir }, at);
  }
  return llama;
}

let reference: Promise<Llama> | null = null;

/**
 * Next-token logits of `tokens` decoded from scratch, in batches that end at `cuts`, in a module of its own with the
 * engine's context settings (`info`: its KV types, attention kernel and size). Measures llama.cpp's batch-split noise
 * for this model and prompt, and mirrors what a cached engine decoded.
 */
export async function splitLogits(
  model: ModelName,
  info: EngineInfo,
  tokens: ArrayLike<number>,
  cuts: number[],
): Promise<Float32Array> {
  reference ??= openLlama();
  const llama = await reference;
  const m = (await LlamaModel.load(llama, `/models/${model}.gguf`))!;
  const kv = info.kvCache!;
  const ctx = await LlamaContext.create(m, {
    nCtx: info.nCtx,
    nBatch: N_BATCH,
    nUbatch: N_BATCH,
    nSeqMax: 1,
    threads: 1,
    typeK: kv.typeK,
    typeV: kv.typeV,
    flashAttn: kv.flashAttention ? 1 : 0,
  });
  try {
    const ends = [...cuts.filter((c) => c > 0 && c < tokens.length), tokens.length];
    let start = 0;
    let last = 0;
    for (const end of ends) {
      const part = Array.from({ length: end - start }, (_, k) => tokens[start + k]!);
      const status = await ctx.decode(
        part,
        part.map((_, k) => start + k),
        part.map(() => 0),
        part.map((_, k) => k === part.length - 1),
      );
      if (status !== 0) throw new Error(`decode failed: ${status}`);
      last = part.length - 1;
      start = end;
    }
    return ctx.logits(last);
  } finally {
    ctx.free();
    m.free();
  }
}

// --- logits --------------------------------------------------------------------------------------------------------

export const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i]!)), 0);
export const argmax = (a: Float32Array) => a.reduce((best, v, i) => (v > a[best]! ? i : best), 0);
/** The largest logit's magnitude: the scale differences are measured against. */
export const scale = (a: Float32Array) => a.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
export const relDiff = (a: Float32Array, b: Float32Array) => maxDiff(a, b) / scale(a);
/** How far the most likely token is ahead of the second. */
export function top2(a: Float32Array): number {
  let [b1, b2] = [-Infinity, -Infinity];
  for (const v of a) {
    if (v > b1) [b1, b2] = [v, b1];
    else if (v > b2) b2 = v;
  }
  return b1 - b2;
}

// --- chats ---------------------------------------------------------------------------------------------------------

export const hello: ChatMessage[] = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'Write a short poem about the sea.' },
];

// About 250 tokens of system prompt: long enough for the caches (minTokens), and a whole prompt fits in one batch.
export const SYSTEM = `You are Hearth, a careful assistant that lives in a web page. ${Array.from(
  { length: 25 },
  (_, i) => `Rule ${i + 1}: answer about ${['bread', 'rivers', 'stars', 'maps', 'tea'][i % 5]} plainly.`,
).join(' ')}`;

export async function collect(
  stream: AsyncIterable<ChatCompletionChunk>,
): Promise<{ text: string; chunks: ChatCompletionChunk[] }> {
  const chunks: ChatCompletionChunk[] = [];
  for await (const c of stream) chunks.push(c);
  return { text: chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), chunks };
}

/** A greedy, non-streamed answer (8 tokens unless asked), with the logprobs expectSameAnswer compares. */
export async function ask(
  engine: NodeEngine,
  messages: ChatMessage[],
  extra: Omit<ChatCompletionCreateParams, 'messages' | 'stream'> = {},
): Promise<ChatCompletion> {
  return engine.chat.completions.create({
    messages,
    temperature: 0,
    max_tokens: extra.max_tokens ?? 8,
    ...COMPARABLE,
    ...extra,
    stream: false,
  });
}

/** Another question moves the model's log-probabilities by more than PROMPT_EFFECT: expectSameAnswer on its answers
 * can tell a wrong state from the right one. */
export async function expectPromptMatters(engine: NodeEngine) {
  const answer = (q: string) =>
    ask(engine, [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: q },
    ]);
  expect(answerDiff(await answer('Name a bread.'), await answer('And a river?')).logprobs).toBeGreaterThan(
    PROMPT_EFFECT,
  );
}

/** The same tokens, and at every step the same top log-probabilities within `tolerance` (compare.ts). */
export function expectSameAnswer(a: ChatCompletion, b: ChatCompletion, tolerance = LOGPROB_TOLERANCE) {
  const diff = answerDiff(a, b);
  expect(diff.tokens[0]).toEqual(diff.tokens[1]);
  expect(diff.logprobs).toBeLessThan(tolerance);
}

export const reply = (r: ChatCompletion) => r.choices[0]!.message.content!;

/** The conversation after `prev`: the answer, then the next question. */
export const next = (prev: ChatMessage[], answer: string, q: string): ChatMessage[] => [
  ...prev,
  { role: 'assistant', content: answer },
  { role: 'user', content: q },
];
