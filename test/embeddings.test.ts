// Embeddings and rerank over the real wasm, with fixture models of Qwen3's architecture: an embedding model (last-token
// pooling) and a reranker (rank pooling, yes/no classifier). Batched results must equal each text alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidRequestError } from '../src/errors.ts';
import type { NodeEngine } from '../src/node.ts';
import { hello, testEngine } from './helpers.ts';

let embedder: NodeEngine;
let reranker: NodeEngine;
let chat: NodeEngine;

beforeAll(async () => {
  [embedder, reranker, chat] = await Promise.all([
    testEngine('qwen3-embed', { persistent: false }),
    testEngine('qwen3-rerank', { persistent: false }),
    testEngine('qwen2-hello', { persistent: false }),
  ]);
});
afterAll(async () => {
  for (const e of [embedder, reranker, chat]) await e?.unload();
});

const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);
const maxDiff = (a: number[], b: number[]) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i]!)), 0);

const TEXTS = Array.from(
  { length: 11 },
  (_, i) => `Document number ${i} is about ${['bread', 'the sea', 'stars', 'tea'][i % 4]}.`,
);

describe('embeddings', () => {
  it('give one unit vector per input, in order, equal to each input embedded alone', async () => {
    const all = await embedder.embeddings.create({ input: TEXTS });
    expect(all.object).toBe('list');
    expect(all.data.map((d) => d.index)).toEqual(TEXTS.map((_, i) => i));
    const info = await embedder.info();
    for (const d of all.data) {
      expect(d.embedding).toHaveLength(info.model!.nEmbd);
      expect(dot(d.embedding, d.embedding)).toBeCloseTo(1, 5);
    }
    // 11 texts over 4 slots: three decodes; each vector must be the one the text gets alone.
    for (const i of [0, 5, 10]) {
      const alone = await embedder.embeddings.create({ input: TEXTS[i]! });
      expect(maxDiff(alone.data[0]!.embedding, all.data[i]!.embedding), `text ${i}`).toBeLessThan(1e-4);
    }
    expect(dot(all.data[0]!.embedding, all.data[1]!.embedding)).toBeLessThan(0.999);
    expect(all.usage.prompt_tokens).toBeGreaterThan(11 * 5);
  });

  it('dimensions keeps the first values, normalised again', async () => {
    const full = (await embedder.embeddings.create({ input: 'the sea at night' })).data[0]!.embedding;
    const short = (await embedder.embeddings.create({ input: 'the sea at night', dimensions: 16 })).data[0]!.embedding;
    expect(short).toHaveLength(16);
    expect(dot(short, short)).toBeCloseTo(1, 5);
    const scale = short[0]! / full[0]!;
    expect(
      maxDiff(
        short,
        full.slice(0, 16).map((x) => x * scale),
      ),
    ).toBeLessThan(1e-5);
  });

  it('a chat model, or a bad input, gets a typed error and the engine goes on', async () => {
    await expect(chat.embeddings.create({ input: 'x' })).rejects.toThrow(InvalidRequestError);
    await expect(chat.embeddings.create({ input: 'x' })).rejects.toMatchObject({ code: 'not_an_embedding_model' });
    await expect(embedder.embeddings.create({ input: [] })).rejects.toThrow(/input/);
    await expect(embedder.embeddings.create({ input: 'x'.repeat(5000) })).rejects.toMatchObject({
      code: 'input_too_long',
    });
    const r = await chat.chat.completions.create({ messages: hello, temperature: 0 });
    expect(r.choices[0]!.message.content).toBe('Hello, world!');
  });
});

describe('rerank', () => {
  const docs = TEXTS.slice(0, 7);

  it('scores every document, best first, equal to each scored alone', async () => {
    const r = await reranker.rerank({ query: 'What do people eat?', documents: docs, return_documents: true });
    expect(r.results).toHaveLength(docs.length);
    expect(r.results.map((x) => x.index).sort()).toEqual(docs.map((_, i) => i));
    for (let k = 1; k < r.results.length; k++) {
      expect(r.results[k]!.relevance_score).toBeLessThanOrEqual(r.results[k - 1]!.relevance_score);
    }
    for (const x of r.results) {
      expect(x.document!.text).toBe(docs[x.index]);
      // Qwen3's reranker head ends in a softmax over yes/no: the score is P(yes).
      expect(x.relevance_score).toBeGreaterThan(0);
      expect(x.relevance_score).toBeLessThan(1);
    }
    for (const x of r.results.slice(0, 3)) {
      const alone = await reranker.rerank({ query: 'What do people eat?', documents: [docs[x.index]!] });
      expect(Math.abs(alone.results[0]!.relevance_score - x.relevance_score)).toBeLessThan(1e-4);
    }
    const top = await reranker.rerank({ query: 'What do people eat?', documents: docs, top_n: 2 });
    expect(top.results.map((x) => x.index)).toEqual(r.results.slice(0, 2).map((x) => x.index));
    expect(new Set(r.results.map((x) => x.relevance_score.toFixed(6))).size).toBeGreaterThan(1);
  });

  it('other models get a typed error', async () => {
    await expect(embedder.rerank({ query: 'q', documents: ['d'] })).rejects.toMatchObject({ code: 'not_a_reranker' });
    await expect(reranker.embeddings.create({ input: 'x' })).rejects.toMatchObject({ code: 'not_an_embedding_model' });
    await expect(reranker.rerank({ query: '', documents: ['d'] })).rejects.toThrow(/query/);
  });
});
