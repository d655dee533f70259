// npm run bench -- quants [--json] [--reps N] [--types q4_0,iq4_xs]
// Decode and prefill at 2 threads for each quantization people download, on the benchmark model's shapes
// (Qwen2.5-0.5B, requantized from Q8_0 with llama.cpp's quantizer): Hearth's relaxed-SIMD and plain SIMD128 builds
// vs native llama.cpp vs wllama, engines alternated, median of 3 unless --reps. The JSON's last line holds, for every
// type, {type}_decode_vs_native and {type}_prefill_vs_native (the relaxed build, which Chromium picks),
// {type}_plain_decode_vs_native and {type}_plain_prefill_vs_native, and {type}_decode_vs_wllama (0 where wllama
// could not run the model).
import { ensureModel, HUB_QUANTS, type ModelName } from '../../test/fixtures/models.ts';
import { openBenchPage } from '../browser.ts';
import type { ScenarioOptions } from '../common.ts';
import { compareEngines } from './decode.ts';

const THREADS = 2;

export async function quants(opts: ScenarioOptions) {
  const rows: Array<Record<string, number>> = [];
  const summary: Record<string, number> = { threads: THREADS };
  const unknown = opts.types?.filter((t) => !(HUB_QUANTS as readonly string[]).includes(t)) ?? [];
  if (unknown.length) throw new Error(`--types: unknown ${unknown.join(', ')}; known: ${HUB_QUANTS.join(', ')}`);
  const types = HUB_QUANTS.filter((t) => !opts.types || opts.types.includes(t));
  // Quantizing the 0.5B model takes a minute or two per type, once: before the browser opens.
  for (const type of types) await ensureModel(modelFor(type));
  for (const type of types) {
    const i = HUB_QUANTS.indexOf(type);
    // A fresh page for each model: once wllama has failed on a model, every later wllama in that page fails too.
    const b = await openBenchPage();
    try {
      const row = await compareEngines(b, modelFor(type), THREADS, opts, true);
      rows.push({ type_index: i, ...row });
      summary[`${type}_decode_vs_native`] = row.decode_ratio_vs_native!;
      summary[`${type}_prefill_vs_native`] = row.prefill_ratio_vs_native!;
      summary[`${type}_plain_decode_vs_native`] = row.plain_decode_ratio_vs_native!;
      summary[`${type}_plain_prefill_vs_native`] = row.plain_prefill_ratio_vs_native!;
      summary[`${type}_decode_vs_wllama`] = row.decode_ratio_vs_wllama!;
      opts.log(
        `  ${type}: relaxed decode ${row.decode_ratio_vs_native}x native (plain ${row.plain_decode_ratio_vs_native}x), ` +
          `${row.decode_ratio_vs_wllama}x wllama; prefill ${row.prefill_ratio_vs_native}x native (plain ${row.plain_prefill_ratio_vs_native}x)`,
      );
    } finally {
      await b.close();
    }
  }
  return [...rows, summary];
}

/** The benchmark model quantized as `type` (Q8_0 is the benchmark model itself). */
export const modelFor = (type: (typeof HUB_QUANTS)[number]): ModelName =>
  type === 'q8_0' ? 'bench-qwen2.5-0.5b' : (`bench-qwen2.5-0.5b-${type}` as ModelName);
