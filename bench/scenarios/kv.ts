// npm run bench -- kv [--json] [--reps N]
// Why Hearth's KV cache defaults to f32 without flash attention: the time to decode 48 new prompt tokens, and one
// more token, after 124 / 1,200 / 2,300 tokens already in the cache, for each KV type and attention kernel. Node,
// single-thread build, the benchmark-size model; median of --reps.
import { LlamaContext } from '../../src/backends/llamacpp/binding/context.ts';
import { LlamaModel } from '../../src/backends/llamacpp/binding/model.ts';
import { ensureModel } from '../../test/fixtures/models.ts';
import { openLlama } from '../../test/helpers.ts';
import type { GgmlType } from '../../src/types.ts';
import { median, round, type ScenarioOptions } from '../common.ts';

const LAYOUTS: Array<[GgmlType, 0 | 1]> = [
  ['f16', 1],
  ['f16', 0],
  ['f32', 1],
  ['f32', 0],
  ['q8_0', 1],
];
const CONTEXTS = [124, 1200, 2300];
const NEW = 48;

export async function kv(opts: ScenarioOptions) {
  await ensureModel('bench-qwen2.5-0.5b');
  const llama = await openLlama();
  const model = (await LlamaModel.load(llama, '/models/bench-qwen2.5-0.5b.gguf'))!;
  const tokens = Array.from({ length: Math.max(...CONTEXTS) + NEW + 1 }, (_, i) => 1000 + ((i * 7919) % 50000));
  const row: Record<string, number> = { threads: 1, new_tokens: NEW, reps: opts.reps };
  try {
    for (const [type, flash] of LAYOUTS) {
      const ctx = await LlamaContext.create(model, {
        nCtx: 4096,
        nBatch: 512,
        nUbatch: 512,
        nSeqMax: 1,
        threads: 1,
        typeK: type,
        typeV: type,
        flashAttn: flash,
      });
      try {
        const decode = async (from: number, n: number) => {
          const part = tokens.slice(from, from + n);
          const status = await ctx.decode(
            part,
            part.map((_, k) => from + k),
            part.map(() => 0),
            part.map((_, k) => k === n - 1),
          );
          if (status !== 0) throw new Error(`decode failed (${status})`);
        };
        let filled = 0;
        for (const n of CONTEXTS) {
          for (; filled < n; filled += Math.min(512, n - filled)) await decode(filled, Math.min(512, n - filled));
          const prompt: number[] = [];
          const step: number[] = [];
          for (let rep = 0; rep < opts.reps; rep++) {
            ctx.seqRm(0, n);
            let t = performance.now();
            await decode(n, NEW);
            prompt.push(performance.now() - t);
            t = performance.now();
            await decode(n + NEW, 1);
            step.push(performance.now() - t);
          }
          ctx.seqRm(0, n);
          const key = `${type}_${flash ? 'flash' : 'plain'}_${n}`;
          row[`${key}_prompt_ms`] = round(median(prompt));
          row[`${key}_step_ms`] = round(median(step));
          opts.log(
            `${type.padEnd(4)} ${flash ? 'flash attention' : 'plain attention'} after ${String(n).padStart(4)} tokens: ` +
              `${NEW} new tokens ${median(prompt).toFixed(0).padStart(5)} ms, one token ${median(step).toFixed(0).padStart(4)} ms`,
          );
        }
      } finally {
        ctx.free();
      }
    }
  } finally {
    model.free();
  }
  return [row];
}
