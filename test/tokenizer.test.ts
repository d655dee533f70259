// Tokenization against llama.cpp's own test vectors (models/ggml-vocab-*.gguf with .inp/.out), through our wasm
// build and binding; and detokenization one token at a time, including characters split across tokens.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { llamaSource } from '../scripts/llama-source.mjs';
import { Detokenizer } from '../src/backends/llamacpp/run/detokenizer.ts';
import type { Llama } from '../src/backends/llamacpp/binding/llama.ts';
import { LlamaModel } from '../src/backends/llamacpp/binding/model.ts';
import { openLlama } from './helpers.ts';

const vocabDir = join(llamaSource().dir, 'models');
const SEP = '\n__ggml_vocab_test__\n';

// Read the way llama.cpp's tests/test-tokenizer-0.cpp reads them.
function vectors(vocab: string): Array<{ text: string; ids: number[] }> {
  const raw = readFileSync(join(vocabDir, `ggml-vocab-${vocab}.gguf.inp`), 'utf8');
  const inputs = raw.split(SEP);
  if (raw.endsWith(SEP)) inputs.pop(); // the C++ reader stops at the end instead of yielding an empty case
  const outputs = readFileSync(join(vocabDir, `ggml-vocab-${vocab}.gguf.out`), 'utf8').split('\n');
  if (outputs.at(-1) === '') outputs.pop();
  expect(inputs.length).toBe(outputs.length);
  return inputs.map((text, i) => ({ text, ids: outputs[i]!.trim().split(' ').filter(Boolean).map(Number) }));
}

const VOCABS = [
  'qwen2',
  'llama-bpe',
  'llama-spm',
  'gpt-2',
  'phi-3',
  'falcon',
  'deepseek-llm',
  'starcoder',
  'command-r',
];

let llama: Llama;
const models = new Map<string, LlamaModel>();

beforeAll(async () => {
  llama = await openLlama({ '/vocab': vocabDir });
  for (const v of VOCABS) {
    const m = await LlamaModel.load(llama, `/vocab/ggml-vocab-${v}.gguf`, { vocabOnly: true });
    if (!m) throw new Error(`vocab ${v} did not load: ${llama.log.since(0, true).join('\n')}`);
    models.set(v, m);
  }
});

afterAll(() => {
  for (const m of models.values()) m.free();
});

describe('tokenizer matches llama.cpp test vectors', () => {
  for (const vocab of VOCABS) {
    it(vocab, () => {
      const model = models.get(vocab)!;
      const cases = vectors(vocab);
      expect(cases.length).toBeGreaterThan(20);
      for (const { text, ids } of cases) {
        expect(Array.from(model.tokenize(text, false, false)), JSON.stringify(text)).toEqual(ids);
      }
    });
  }
});

describe('detokenizer', () => {
  function streamText(model: LlamaModel, ids: ArrayLike<number>) {
    const d = new Detokenizer((t) => model.tokenBytes(t, false));
    const pieces = Array.from(ids, (t) => d.push(t));
    return { pieces, text: pieces.join('') + d.flush() };
  }

  it('round-trips every byte-level BPE test vector, one token at a time', () => {
    for (const vocab of ['qwen2', 'llama-bpe', 'gpt-2']) {
      const model = models.get(vocab)!;
      for (const { text, ids } of vectors(vocab)) {
        expect(streamText(model, ids).text, `${vocab}: ${JSON.stringify(text)}`).toBe(text);
      }
    }
  });

  it('holds back a character split across tokens until it is whole', () => {
    const model = models.get('qwen2')!;
    const text = 'Llamas 🦙 and 𝄞 clefs, 日本語.';
    const ids = model.tokenize(text, false, false);
    const { pieces, text: out } = streamText(model, ids);
    expect(out).toBe(text);
    // Some token carried only part of a character: it produced no text, and nothing broken was ever emitted.
    const partial = Array.from(ids).filter((t) =>
      new TextDecoder('utf-8', { fatal: false }).decode(model.tokenBytes(t, false)).includes('\uFFFD'),
    );
    expect(partial.length).toBeGreaterThan(0);
    expect(pieces.some((p) => p === '')).toBe(true);
    expect(pieces.join('')).not.toContain('\uFFFD');
  });

  it('parses control tokens only when asked (special=true for templates, false for user text)', () => {
    const model = models.get('qwen2')!;
    const special = Array.from(model.tokenize('<|im_start|>user', false, true));
    const plain = Array.from(model.tokenize('<|im_start|>user', false, false));
    expect(special[0]).toBe(151644);
    expect(special.length).toBe(2);
    expect(plain).not.toContain(151644);
    expect(plain.length).toBeGreaterThan(2);
  });
});
