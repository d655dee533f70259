// The quantizations people download (and IQ4_NL, Q5_0 and Q5_1, which a K-quant file of a model whose rows are no
// multiple of 256 is mostly made of), made with llama.cpp's own quantizer
// from one f32 model: each loads, runs through its wasm kernels, and answers as the f32 model does, with next-token
// logits close to the f32 ones.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeEngine } from '../src/node.ts';
import type { ChatMessage } from '../src/types.ts';
import { HUB_QUANTS, type ModelName } from './fixtures/models.ts';
import { inspect, argmax, ask, relDiff, reply, SYSTEM, testEngine } from './helpers.ts';

const messages: ChatMessage[] = [
  { role: 'system', content: SYSTEM },
  { role: 'user', content: 'Name a bread.' },
];
const NO_CACHE = { persistent: false, conversations: false, systemPrompt: false, nCtx: 1024 };

// llama_ftype of each type (general.file_type in the GGUF the quantizer writes).
const FILE_TYPE = {
  q4_0: '2',
  q5_0: '8',
  q5_1: '9',
  q8_0: '7',
  q4_k_m: '15',
  q5_k_m: '17',
  q6_k: '18',
  iq4_nl: '25',
  iq4_xs: '30',
};

let f32: NodeEngine;
let reference: Float32Array;
beforeAll(async () => {
  f32 = await testEngine('qwen2-hello-256', NO_CACHE);
  reference = (await inspect(f32).promptLogits({ messages })).logits;
});
afterAll(() => f32.unload());

describe.each([...HUB_QUANTS, 'iq4_nl', 'q5_0', 'q5_1'] as const)('%s', (type) => {
  it('answers like the f32 model, with close next-token logits', async () => {
    const engine = await testEngine(`qwen2-hello-256-${type}` as ModelName, NO_CACHE);
    try {
      expect((await engine.info()).model!.metadata['general.file_type']).toBe(FILE_TYPE[type]);
      const logits = (await inspect(engine).promptLogits({ messages })).logits;
      console.log(`[quant] ${type}: logits ${relDiff(reference, logits).toExponential(2)} of the f32 scale`);
      expect(argmax(logits)).toBe(argmax(reference));
      expect(relDiff(reference, logits)).toBeLessThan(0.1);
      expect(reply(await ask(engine, messages))).toBe('Hello, world!');
    } finally {
      await engine.unload();
    }
  });
});
