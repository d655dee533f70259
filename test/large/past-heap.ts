// What the tests of the model past 4 GiB share (test/large): the question they ask, native llama.cpp's answer to it,
// and a conversation saved in IndexedDB, restored after a reload and compared with a cold read.
import { expect } from 'vitest';
import type { NodeEngine } from '../../src/node.ts';
import type { ChatCompletion, ChatMessage } from '../../src/types.ts';
import { COMPARABLE } from '../compare.ts';
import { nativeAnswer } from '../fixtures/llama-server.ts';
import { ask, inspect, modelPath, newDb, next, reply, testEngine, type TestEngineOptions } from '../helpers.ts';

export const MODEL = 'llama-past-4gib';
export const QUESTION: ChatMessage[] = [{ role: 'user', content: 'What does a hearth keep?' }];

/** Native llama.cpp's greedy 4-token answer to QUESTION on the model, with its log-probabilities. */
export const nativeOnModel = (): Promise<ChatCompletion> =>
  nativeAnswer(modelPath(MODEL), { messages: QUESTION, temperature: 0, max_tokens: 4, ...COMPARABLE });

/** The largest difference between two logit vectors at the first's five likeliest tokens. */
export function topDiff(a: Float32Array, b: Float32Array): number {
  const top = [...a.keys()].sort((x, y) => a[y]! - a[x]!).slice(0, 5);
  return Math.max(...top.map((t) => Math.abs(a[t]! - b[t]!)));
}

/**
 * A turn answered and saved in IndexedDB by an engine made with `opts`, the engine made again (a reload), the next
 * turn's prompt read from the saved state; its logits' largest difference from `cold`'s reading of the same prompt.
 */
export async function restoredVsCold(
  opts: TestEngineOptions,
  cold: NodeEngine,
  track: (e: Promise<NodeEngine>) => Promise<NodeEngine>,
): Promise<number> {
  const withDb = { ...opts, db: newDb(), minTokens: 8, nCtx: 512 };
  const saver = await track(testEngine(MODEL, withDb));
  const turn2 = next(QUESTION, reply(await ask(saver, QUESTION, { max_tokens: 4 })), 'And what else?');
  await saver.cache.flush();
  await saver.unload();
  const reloaded = await track(testEngine(MODEL, withDb));
  const restored = await inspect(reloaded).promptLogits({ messages: turn2 });
  expect(restored.source).toBe('indexeddb');
  expect(restored.cached).toBeGreaterThan(0);
  await reloaded.unload();
  const fresh = await inspect(cold).promptLogits({ messages: turn2 });
  return topDiff(fresh.logits, restored.logits);
}
