// npm run bench -- decode [--json] [--reps N] [--threads 1,2]
// Prefill and decode speed of Hearth vs @wllama/wllama 3.8.1 (CPU) vs native llama.cpp (node-llama-cpp), on the
// benchmark-size model (Qwen2.5-0.5B shapes, Q8_0), same prompt (~128 tokens), 64 generated tokens, same threads.
// Engines run in rotating order, repeated; each figure is the median over the repetitions.
import { ChatTemplate } from '../../src/core/chat/template.ts';
import { ensureModel, type ModelName } from '../../test/fixtures/models.ts';
import { type BenchBrowser, openBenchPage } from '../browser.ts';
import { NativeRunner } from '../native.ts';
import type { RunResult } from '../timed-chat.ts';
import { median, pause, PROMPT, rotate, round, type ScenarioOptions } from '../common.ts';

const N_CTX = 1024;
const GEN = 64;
// hearth: the build the browser picks (relaxed SIMD in Chromium); hearth_plain: the plain SIMD128 build, when asked.
const ENGINES = ['hearth', 'hearth_plain', 'wllama', 'native'] as const;
type EngineName = (typeof ENGINES)[number];

const tps = (tokens: number, ms: number) => (ms > 0 ? (tokens / ms) * 1000 : 0);

export async function decode(opts: ScenarioOptions) {
  const b = await openBenchPage();
  const rows: Array<Record<string, number>> = [];
  try {
    for (const threads of opts.threads ?? [1, 2]) {
      const row = await compareEngines(b, 'bench-qwen2.5-0.5b', threads, opts);
      opts.log(
        `  hearth/wllama: prefill ${row.prefill_ratio_vs_wllama}x, decode ${row.decode_ratio_vs_wllama}x;` +
          ` hearth/native: prefill ${row.prefill_ratio_vs_native}x, decode ${row.decode_ratio_vs_native}x`,
      );
      rows.push({ threads, ...row });
    }
  } finally {
    await b.close();
  }
  return rows;
}

/**
 * Prefill and decode of one model on `threads` threads in Hearth, wllama (in the page `b`) and native llama.cpp,
 * alternated, opts.reps times after a warm-up; medians, and Hearth's ratios to the others. wllama failing to load or
 * run a model (it cannot run every type) leaves its figures at 0. With `plain`, Hearth's plain SIMD128 build runs
 * too, as a fourth engine (hearth_plain_*, plain_*_ratio_vs_native).
 */
export async function compareEngines(
  b: BenchBrowser,
  model: ModelName,
  threads: number,
  opts: ScenarioOptions,
  plain = false,
): Promise<Record<string, number>> {
  const modelPath = await ensureModel(model);
  const url = `/test-models/${model}.gguf`;
  if (plain) await b.call('loadHearth', url, threads, N_CTX, undefined, undefined, 'plain');
  const info = await b.call('loadHearth', url, threads, N_CTX);
  // The prompt exactly as Hearth renders it, for the engines that take raw text. (The benchmark model has
  // Qwen2.5's template, which uses neither bos_token nor eos_token.)
  const prompt = new ChatTemplate(info.model!.chatTemplate, { bos: '', eos: '' }).render(PROMPT);
  let engines: EngineName[] = ENGINES.filter((e) => plain || e !== 'hearth_plain');
  let wllamaVersion = 'not loaded';
  try {
    wllamaVersion = (await b.call('loadWllama', url, threads, N_CTX)).version;
  } catch (err) {
    opts.log(`  wllama could not load ${model}: ${(err as Error).message.split('\n')[0]}`);
    engines = engines.filter((e) => e !== 'wllama');
  }
  const native = await NativeRunner.load(modelPath, threads, N_CTX);
  opts.log(
    `${model}, threads=${threads}: hearth ${info.build} build (llama.cpp ${info.llamaBuild})${plain ? ' and the plain build' : ''}, ` +
      `wllama (llama.cpp ${wllamaVersion}), native (llama.cpp ${native.version})`,
  );
  const run = async (e: EngineName): Promise<RunResult> => {
    if (e === 'wllama') return b.call('runWllama', prompt, GEN);
    if (e === 'native') return native.run(prompt, GEN);
    await b.call('selectHearth', e === 'hearth' ? 'auto' : 'plain');
    return b.call('runHearth', PROMPT, GEN);
  };
  try {
    // Warm-up (first-use allocations, page faults); wllama also fails on some models only when it runs them.
    for (const e of [...engines]) {
      try {
        await run(e);
      } catch (err) {
        if (e !== 'wllama') throw err;
        opts.log(`  wllama could not run ${model}: ${(err as Error).message.split('\n')[0]}`);
        engines = engines.filter((x) => x !== 'wllama');
      }
    }
    const results: Record<EngineName, RunResult[]> = { hearth: [], hearth_plain: [], wllama: [], native: [] };
    for (let rep = 0; rep < opts.reps; rep++) {
      for (const e of rotate([...engines], rep)) {
        await pause(300); // let the previous engine's spinning threads go to sleep
        results[e].push(await run(e));
      }
    }
    const row: Record<string, number> = {};
    for (const e of ENGINES) {
      if (e === 'hearth_plain' && !plain) continue;
      const rs = results[e];
      row[`${e}_prefill_tps`] = rs.length ? round(median(rs.map((r) => tps(r.promptTokens, r.ttftMs)))) : 0;
      row[`${e}_decode_tps`] = rs.length ? round(median(rs.map((r) => tps(r.genTokens - 1, r.decodeMs)))) : 0;
      row[`${e}_prompt_tokens`] = rs[0]?.promptTokens ?? 0;
      row[`${e}_gen_tokens`] = rs[0]?.genTokens ?? 0;
      if (!rs.length) continue;
      opts.log(
        `  ${e.padEnd(7)} prefill ${row[`${e}_prefill_tps`]!.toFixed(1).padStart(6)} tok/s (${row[`${e}_prompt_tokens`]} tokens)` +
          `   decode ${row[`${e}_decode_tps`]!.toFixed(1).padStart(6)} tok/s (${row[`${e}_gen_tokens`]} tokens)`,
      );
    }
    const ratio = (a: number, b: number) => (b > 0 ? round(a / b) : 0);
    row.decode_ratio_vs_wllama = ratio(row.hearth_decode_tps!, row.wllama_decode_tps!);
    row.prefill_ratio_vs_wllama = ratio(row.hearth_prefill_tps!, row.wllama_prefill_tps!);
    row.decode_ratio_vs_native = ratio(row.hearth_decode_tps!, row.native_decode_tps!);
    row.prefill_ratio_vs_native = ratio(row.hearth_prefill_tps!, row.native_prefill_tps!);
    if (plain) {
      row.plain_decode_ratio_vs_native = ratio(row.hearth_plain_decode_tps!, row.native_decode_tps!);
      row.plain_prefill_ratio_vs_native = ratio(row.hearth_plain_prefill_tps!, row.native_prefill_tps!);
    }
    row.reps = opts.reps;
    return row;
  } finally {
    await native.dispose();
    await b.call('unload');
  }
}
