// The KV cache's sizing with a draft model (LoadOptions.draft): the draft's context follows the model's size, so its
// cells come out of the same budget and heap. Without them counted, a context grew into memory that was not there.
import { describe, expect, it } from 'vitest';
import { kvBytesPerToken, kvLayout } from '../../src/backends/llamacpp/cache/kv-layout.ts';

// Qwen2.5-7B beside its draft Qwen2.5-0.5B (their real shapes).
const MAIN = { nLayer: 28, nEmbd: 3584, nHead: 28, nHeadKv: 4, nCtxTrain: 32768 };
const DRAFT = { nLayer: 24, nEmbd: 896, nHead: 14, nHeadKv: 2, nCtxTrain: 32768 };
const MiB = 1024 ** 2;
/** The memory64 build's heap: room for the 7B model's 4.7 GB. */
const HEAP = 16 * 1024 ** 3;
const draftCell = kvBytesPerToken(DRAFT, 'f16', 'f16');

describe("the KV layout with a draft model's cells", () => {
  it('a context that grows stays within the budget with the draft cells counted', () => {
    const options = { kvBudgetBytes: 256 * MiB, cacheTypeK: 'f16' as const };
    const alone = kvLayout(MAIN, 4.7e9, options, undefined, HEAP);
    const paired = kvLayout(MAIN, 4.7e9, options, undefined, HEAP, draftCell);
    expect(paired.maxCtx).toBeLessThan(alone.maxCtx);
    expect(paired.maxCtx * (paired.kvBytesPerToken + draftCell)).toBeLessThanOrEqual(256 * MiB);
    expect(alone.maxCtx * (alone.kvBytesPerToken + draftCell)).toBeGreaterThan(256 * MiB); // what it was before
  });

  it('a fixed nCtx that fits the budget alone but not with the draft is a typed error that counts the draft', () => {
    const perToken = kvBytesPerToken(MAIN, 'f16', 'f16');
    const options = { nCtx: 4096, kvBudgetBytes: 4096 * perToken, cacheTypeK: 'f16' as const };
    expect(kvLayout(MAIN, 4.7e9, options, undefined, HEAP).maxCtx).toBe(4096);
    expect(() => kvLayout(MAIN, 4.7e9, options, undefined, HEAP, draftCell)).toThrow(
      expect.objectContaining({
        code: 'invalid_parameter',
        message: expect.stringMatching(/the draft model's \d+ included/),
      }),
    );
  });
});
