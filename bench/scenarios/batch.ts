// npm run bench -- batch [--json] [--reps N] [--threads 2]
// Continuous batching: aggregate decode speed with 1, 2 and 4 concurrent streams on the benchmark-size model
// (Qwen2.5-0.5B shapes, Q8_0), and in the same run the prefill speed of a ~128-token prompt. Prefill is the
// batched-compute ceiling — one decode step for many tokens — so batching N streams can at best approach
// ceiling = prefill_tps / tps_1. Headless Chromium, Hearth through its public API in its worker.
//
// Aggregate tok/s of k streams: the k requests start together; from the moment the last of them streams its first
// token until the first of them ends, every stream is decoding, and the tokens that arrive in that window over
// its length is the figure. Median over the repetitions; the stream counts alternate order between repetitions.
import { ensureModel } from '../../test/fixtures/models.ts';
import { openBenchPage } from '../browser.ts';
import { decodeCosts, stepProfile } from './batch-profile.ts';
import { median, pause, PROMPT, rotate, round, type ScenarioOptions } from '../common.ts';

const N_CTX = 2048;
const GEN = 64;
const COUNTS = [1, 2, 4] as const;

// Short, different prompts for the streams: their prefill is a small part of the run.
const short = (i: number) => [
  { role: 'user' as const, content: `Stream ${i}: tell a story about ${['bread', 'rivers', 'stars', 'maps'][i]}.` },
];

/** Tokens per second while all streams were decoding (see the header). */
export function aggregateTps(streams: Array<{ times: number[]; tokens: number }>): number {
  const start = Math.max(...streams.map((s) => s.times[0] ?? Infinity));
  const end = Math.min(...streams.map((s) => s.times.at(-1) ?? 0));
  if (!(end > start)) return 0;
  let tokens = 0;
  for (const s of streams) {
    const perChunk = s.tokens / Math.max(1, s.times.length);
    tokens += s.times.filter((t) => t > start && t <= end).length * perChunk;
  }
  return (tokens / (end - start)) * 1000;
}

export async function batch(opts: ScenarioOptions) {
  await ensureModel('bench-qwen2.5-0.5b');
  const url = '/test-models/bench-qwen2.5-0.5b.gguf';
  const threadCounts = opts.threads ?? [2];
  const b = await openBenchPage();
  const rows: Array<Record<string, number>> = [];
  try {
    for (const threads of threadCounts) {
      const info = await b.call('loadHearth', url, threads, N_CTX, undefined, 4);
      opts.log(
        `threads=${threads}: hearth ${info.build} build, n_ctx ${info.nCtx}, KV ${info.kvCache!.typeK}, nParallel ${info.context!.nParallel}`,
      );
      const streams = (k: number) =>
        b.call(
          'runHearthConcurrent',
          Array.from({ length: k }, (_, i) => short(i)),
          GEN,
        );
      await streams(4); // warm-up
      await b.call('runHearth', PROMPT, 2);
      const agg: Record<number, number[]> = { 1: [], 2: [], 4: [] };
      const prefill: number[] = [];
      let promptTokens = 0;
      for (let rep = 0; rep < opts.reps; rep++) {
        for (const k of rotate([...COUNTS], rep)) {
          await pause(300);
          agg[k]!.push(aggregateTps(await streams(k)));
        }
        await pause(300);
        const r = await b.call('runHearth', PROMPT, 2);
        promptTokens = r.promptTokens;
        prefill.push((r.promptTokens / r.ttftMs) * 1000);
        opts.log(
          `  rep ${rep + 1}: ${COUNTS.map((k) => `${k} streams ${agg[k]!.at(-1)!.toFixed(1)}`).join(', ')} tok/s; ` +
            `prefill ${prefill.at(-1)!.toFixed(1)} tok/s`,
        );
      }
      const row: Record<string, number> = { threads };
      for (const k of COUNTS) row[`tps_${k}`] = round(median(agg[k]!));
      row.speedup_2 = round(row.tps_2! / row.tps_1!);
      row.speedup_4 = round(row.tps_4! / row.tps_1!);
      row.prefill_tps = round(median(prefill));
      row.prefill_prompt_tokens = promptTokens;
      row.ceiling = round(row.prefill_tps / row.tps_1!);
      row.speedup_4_over_ceiling = round(row.speedup_4 / row.ceiling);
      row.gen_tokens = GEN;
      row.reps = opts.reps;
      opts.log(
        `  aggregate decode: 1 stream ${row.tps_1} tok/s, 2 streams ${row.tps_2} (${row.speedup_2}x), ` +
          `4 streams ${row.tps_4} (${row.speedup_4}x); prefill ${row.prefill_tps} tok/s (${promptTokens} tokens) → ` +
          `ceiling ${row.ceiling}x; speedup_4 = ${row.speedup_4_over_ceiling} of the ceiling (target 0.8)`,
      );
      rows.push(row);
      await b.call('unload');
    }
  } finally {
    await b.close();
  }
  // Where the time goes (Node, 1 thread): merged into the summary row.
  const profile = { ...(await stepProfile(opts.reps)), ...(await decodeCosts(opts.reps)) };
  const p = profile;
  opts.log(
    `  step loop, 4 streams: ${p.step_ms_4} ms per step = decode ${p.step_decode_ms_4} + sampling ${p.step_sample_ms_4} + ` +
      `rest of the step ${p.step_other_ms_4} + between steps ${p.between_steps_ms_4} (1 stream: ${p.step_ms_1} = ${p.step_decode_ms_1} + ` +
      `${p.step_sample_ms_1} + ${p.step_other_ms_1} + ${p.between_steps_ms_1})`,
  );
  opts.log(
    `  llama_decode: 1 token ${p.decode_1_ms} ms (${p.decode_1_no_logits_ms} without logits), 4 sequences ${p.decode_4_ms} ms ` +
      `(${p.decode_4_no_logits_ms} without logits) → output layer ${p.logits_ms_per_row} ms per sampled row; ` +
      `a 124-token prompt batch ${p.prompt_ms_per_token} ms per token`,
  );
  Object.assign(rows.at(-1)!, profile);
  return rows;
}
