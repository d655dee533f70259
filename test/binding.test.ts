// The low-level binding the caches and the scheduler build on: batched decode with positions and sequence ids,
// KV memory operations, and sequence state export/import.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schemaGrammar } from '../src/core/chat/json-schema.ts';
import type { Llama } from '../src/backends/llamacpp/binding/llama.ts';
import { LlamaModel } from '../src/backends/llamacpp/binding/model.ts';
import { LlamaContext } from '../src/backends/llamacpp/binding/context.ts';
import { Sampler } from '../src/backends/llamacpp/binding/sampler.ts';
import { argmax, maxDiff, openLlama } from './helpers.ts';

let llama: Llama;
let model: LlamaModel;
let ctx: LlamaContext;
let prompt: Int32Array;
/** The context every test here decodes in. */
const CTX: Parameters<typeof LlamaContext.create>[1] = {
  nCtx: 512,
  nBatch: 128,
  nUbatch: 128,
  nSeqMax: 4,
  threads: 1,
  typeK: 'f16',
  typeV: 'f16',
  flashAttn: -1,
};

beforeAll(async () => {
  llama = await openLlama();
  model = (await LlamaModel.load(llama, '/models/qwen2-tiny.gguf'))!;
  ctx = await LlamaContext.create(model, CTX);
  prompt = model.tokenize(
    '<|im_start|>user\nThe quick brown fox jumps over the lazy dog.<|im_end|>\n<|im_start|>assistant\n',
    false,
    true,
  );
});

afterAll(async () => {
  ctx.free();
  model.free();
});

/** Decodes tokens into `seq` from position `from` and returns the logits after the last one. */
async function prefill(seq: number, tokens: ArrayLike<number>, from = 0): Promise<Float32Array> {
  const n = tokens.length;
  const status = await ctx.decode(
    tokens,
    Array.from({ length: n }, (_, i) => from + i),
    new Array(n).fill(seq),
    Array.from({ length: n }, (_, i) => i === n - 1),
  );
  expect(status).toBe(0);
  return ctx.logits(n - 1);
}

describe('binding', () => {
  it('decodes two sequences in one batch, each seeing only its own tokens', async () => {
    await ctx.clear();
    const alone = await prefill(0, prompt);
    await ctx.clear();
    // The same prompt in sequence 1 and a different text in sequence 2, interleaved in one llama_decode.
    const other = model.tokenize('Completely different words here.', false, false);
    const tokens = [...prompt, ...other];
    const seq = [...new Array(prompt.length).fill(1), ...new Array(other.length).fill(2)];
    const pos = [...prompt.keys(), ...other.keys()];
    const outputs = tokens.map((_, i) => i === prompt.length - 1);
    expect(await ctx.decode(tokens, pos, seq, outputs)).toBe(0);
    const batched = ctx.logits(prompt.length - 1);
    // Float noise from a different batch layout, nothing like another sequence's context leaking in.
    expect(maxDiff(alone, batched)).toBeLessThan(1e-2);
    expect(argmax(batched)).toBe(argmax(alone));
    expect(ctx.seqPosMax(1)).toBe(prompt.length - 1);
    expect(ctx.seqPosMax(2)).toBe(other.length - 1);
  });

  it('exports a sequence state and imports it into another sequence with identical next-token logits', async () => {
    await ctx.clear();
    const head = prompt.subarray(0, prompt.length - 1);
    const last = prompt.subarray(prompt.length - 1);
    await prefill(0, head);
    const state = await ctx.stateGet(0);
    expect(state.length).toBeGreaterThan(1000);
    const direct = await prefill(0, last, head.length);
    expect(await ctx.stateSet(state, 3)).toBe(true);
    expect(ctx.seqPosMax(3)).toBe(head.length - 1);
    const restored = await prefill(3, last, head.length);
    expect(maxDiff(direct, restored)).toBe(0);
  });

  it('rejects a state that does not belong to this context', async () => {
    expect(await ctx.stateSet(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]), 2)).toBe(false);
  });

  it('copies, trims, shifts and drops sequences', async () => {
    await ctx.clear();
    await prefill(0, prompt);
    ctx.seqCp(0, 1);
    expect(ctx.seqPosMax(1)).toBe(prompt.length - 1);
    expect(ctx.seqRm(1, 5, -1)).toBe(true); // keep positions 0..4
    expect(ctx.seqPosMax(1)).toBe(4);
    expect(ctx.seqPosMax(0)).toBe(prompt.length - 1); // the copy was independent
    ctx.seqAdd(1, 0, -1, 10);
    expect(ctx.seqPosMin(1)).toBe(10);
    expect(ctx.seqPosMax(1)).toBe(14);
    ctx.seqKeep(1);
    expect(ctx.seqPosMax(0)).toBe(-1);
    expect(ctx.seqPosMax(1)).toBe(14);
  });

  it('trimming at a divergence and decoding the rest equals decoding from scratch (within batch-split noise)', async () => {
    await ctx.clear();
    const cold = await prefill(0, prompt);
    await ctx.clear();
    await prefill(1, prompt.subarray(0, 10));
    await prefill(1, model.tokenize(' something else entirely', false, false), 10); // a wrong turn
    ctx.seqRm(1, 10, -1);
    const warm = await prefill(1, prompt.subarray(10), 10);
    expect(maxDiff(cold, warm)).toBeLessThan(1e-2);
    expect(argmax(warm)).toBe(argmax(cold));
  });

  it('a grammar allows the same tokens whether llama.cpp checks the whole vocabulary at once or a few at a time', async () => {
    // Over many candidates llama.cpp reads each token's text from a table decoded once (patch 0022); over a few it
    // decodes them on the spot, as upstream does. Walk a JSON schema's grammar along allowed tokens and compare.
    const schema = {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 12 }, n: { type: 'integer' } },
      required: ['name', 'n'],
    };
    const params = {
      temperature: 0,
      topK: 40,
      topP: 1,
      minP: 0,
      repeatLastN: 64,
      repeatPenalty: 1,
      frequencyPenalty: 0,
      presencePenalty: 0,
      seed: 1,
    };
    const sampler = new Sampler(model, params, schemaGrammar(schema, 'response_format'));
    const vocab = Int32Array.from({ length: model.nVocab }, (_, i) => i);
    const allowedIds = (flags: boolean[], from = 0) => flags.flatMap((ok, i) => (ok ? [from + i] : []));
    let seed = 12345;
    try {
      for (let step = 0; step < 20; step++) {
        const whole = allowedIds(sampler.grammarAllows(vocab));
        const few: number[] = [];
        for (let i = 0; i < vocab.length; i += 200) {
          few.push(...allowedIds(sampler.grammarAllows(vocab.subarray(i, i + 200)), i));
        }
        expect(whole, `step ${step}`).toEqual(few);
        expect(whole.length).toBeGreaterThan(0);
        const picks = whole.filter((t) => !model.eogTokens.has(t)); // the end of the reply ends the walk
        if (!picks.length) break;
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        const next = picks[seed % picks.length]!;
        sampler.grammarAllows(new Int32Array([next]), next);
      }
    } finally {
      sampler.free();
    }
  });

  it('a JSON string in a schema grammar takes no UTF-16 surrogate (bytes ED A0 80–ED BF BF), only real UTF-8', async () => {
    // Qwen's byte-level vocabulary has a token for every byte: a model may write ED A0 80, which llama.cpp's grammar
    // decodes to U+D800. A text decoder makes that three U+FFFD, so a string with maxLength 2 would hold 3 characters.
    const params = {
      temperature: 0,
      topK: 40,
      topP: 1,
      minP: 0,
      repeatLastN: 64,
      repeatPenalty: 1,
      frequencyPenalty: 0,
      presencePenalty: 0,
      seed: 1,
    };
    const sampler = new Sampler(model, params, schemaGrammar({ type: 'string', maxLength: 2 }, 'response_format'));
    const byteToken = (b: number) => {
      for (let t = 0; t < model.nVocab; t++) {
        const bytes = model.tokenBytes(t, false);
        if (bytes.length === 1 && bytes[0] === b) return t;
      }
      throw new Error(`no token for byte ${b.toString(16)}`);
    };
    const quote = model.tokenize('"', false, false);
    expect(quote.length).toBe(1);
    const [ed, a0, bf, x9f, x80] = [0xed, 0xa0, 0xbf, 0x9f, 0x80].map(byteToken) as [
      number,
      number,
      number,
      number,
      number,
    ];
    try {
      sampler.grammarAllows(quote, quote[0]);
      expect(sampler.grammarAllows(new Int32Array([ed]), ed)).toEqual([true]); // ED 80–9F xx is U+D000–D7FF
      // After ED: 9F may follow (U+D7C0–D7FF), A0 and BF may not (surrogates).
      expect(sampler.grammarAllows(new Int32Array([a0, bf, x9f]))).toEqual([false, false, true]);
      sampler.grammarAllows(new Int32Array([x9f]), x9f);
      expect(sampler.grammarAllows(new Int32Array([x80]))).toEqual([true]); // ED 9F 80 = U+D7C0
    } finally {
      sampler.free();
    }
  });

  it('a heap past 2 GiB (pointers of 2^31 and up, negative as wasm32 returns them) reads the same logits and state', async () => {
    // A model of 2.5 GB on the CPU engine puts its context's buffers there; a filler does it for the tiny model.
    const high = await openLlama();
    const filler = high.malloc(2.2 * 2 ** 30);
    const m = (await LlamaModel.load(high, '/models/qwen2-tiny.gguf'))!;
    const c = await LlamaContext.create(m, CTX);
    try {
      const n = prompt.length;
      const decode = (on: LlamaContext) =>
        on.decode(
          prompt,
          Array.from({ length: n }, (_, i) => i),
          new Array(n).fill(0),
          Array.from({ length: n }, (_, i) => i === n - 1),
        );
      await ctx.clear();
      expect(await decode(ctx)).toBe(0);
      const low = ctx.logits(n - 1);
      const lowState = await ctx.stateGet(0);
      expect(await decode(c)).toBe(0);
      expect(maxDiff(c.logits(n - 1), low)).toBe(0);
      const state = await c.stateGet(0);
      expect(state).toEqual(lowState);
      await c.clear();
      expect(await c.stateSet(state, 1)).toBe(true);
      expect(c.seqPosMax(1)).toBe(n - 1);
    } finally {
      c.free();
      m.free();
      high.free(filler);
    }
  });

  it('frees everything it allocates, also when a call fails', async () => {
    const calls = async () => {
      model.tokenize('Some text to tokenize, again and again.', false, false);
      model.tokenBytes(1000, false);
      await ctx.stateSet(new Uint8Array(64), 2); // rejected
      await ctx.clear();
      await prefill(0, prompt);
      await ctx.stateGet(0);
    };
    await calls(); // llama.cpp allocates some buffers on first use and keeps them
    const before = llama.heapInUse;
    for (let i = 0; i < 50; i++) await calls();
    // dlmalloc counts whole chunks: a buffer placed in a free chunk up to 15 bytes larger than asked counts those
    // bytes too (seen: +8 after 50 rounds). Leaking even the smallest allocation (a 16-byte chunk) each round adds 800.
    expect(llama.heapInUse - before).toBeLessThan(100);
  });
});
