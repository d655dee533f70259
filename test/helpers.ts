import { join } from 'node:path';
import type { Engine } from '../src/engine/engine.ts';
import { createNodeEngine } from '../src/node.ts';
import type { ChatCompletionChunk, ChatMessage } from '../src/types.ts';
import { modelsDir, type ModelName } from './fixtures/models.ts';

export const modelPath = (name: ModelName) => join(modelsDir, `${name}.gguf`);

export async function engineWith(name: ModelName, opts: { nCtx?: number } = {}): Promise<Engine> {
  const engine = await createNodeEngine();
  await engine.load({ path: modelPath(name) }, { nCtx: opts.nCtx ?? 1024 });
  return engine;
}

export const hello: ChatMessage[] = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'Write a short poem about the sea.' },
];

export async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<{ text: string; chunks: ChatCompletionChunk[] }> {
  const chunks: ChatCompletionChunk[] = [];
  for await (const c of stream) chunks.push(c);
  return { text: chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), chunks };
}

// About 250 tokens of system prompt: long enough for the caches (minTokens), and a whole prompt fits in one batch.
export const SYSTEM = 'You are Hearth, a careful assistant that lives in a web page. ' + Array.from({ length: 25 },
  (_, i) => `Rule ${i + 1}: answer about ${['bread', 'rivers', 'stars', 'maps', 'tea'][i % 5]} plainly.`).join(' ');
