// npm run bench -- memory64 [--json] [--reps N] [--threads 2] [--types q8_0,q4_k_m]
// What memory64 costs: the memory64 build (hearth-mt64: a heap past 4 GiB, for a model wasm32 cannot hold) against
// the wasm32 build of the same kind (hearth-mt: pthreads, SIMD128) on the benchmark model, through the public API:
// prefill and decode tok/s of a ~128-token prompt and 64 tokens, nothing cached, the builds alternated. Node 26
// (Node 20's V8 has memory64 behind a flag): rerun under it as the webgpu scenario is. Needs `npm run build:wasm --
// --memory64`.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createNodeEngine, defaultWasmDir, type NodeEngine } from '../../src/node.ts';
import { ensureModel, type ModelName } from '../../test/fixtures/models.ts';
import { median, pause, PROMPT, rotate, round, type ScenarioOptions } from '../common.ts';
import { NO_CACHE, type RunResult, timedChat } from '../timed-chat.ts';
import { rerunUnderDawn } from './webgpu.ts';

const N_CTX = 1024;
const GEN = 64;
const BUILDS = ['mt', 'mt64'] as const;

const tps = (tokens: number, ms: number) => (ms > 0 ? (tokens / ms) * 1000 : 0);

export async function memory64(opts: ScenarioOptions): Promise<Array<Record<string, number>>> {
  if (!existsSync(join(defaultWasmDir, 'hearth-mt64.wasm'))) {
    throw new Error('hearth-mt64.wasm is not built: npm run build:wasm -- --memory64');
  }
  if (!process.env.HEARTH_WEBGPU) return rerunUnderDawn(); // Node 26, as the GPU scenarios run
  const threads = opts.threads?.[0] ?? 2;
  const rows: Array<Record<string, number>> = [];
  for (const t of opts.types ?? ['q8_0', 'q4_k_m']) {
    const name = (t === 'q8_0' ? 'bench-qwen2.5-0.5b' : `bench-qwen2.5-0.5b-${t}`) as ModelName;
    const path = await ensureModel(name);
    const engines: Partial<Record<(typeof BUILDS)[number], NodeEngine>> = {};
    try {
      for (const b of BUILDS) {
        engines[b] = await createNodeEngine({ variant: b, threads, cache: NO_CACHE, modelsDir: null });
        await engines[b].load({ path }, { nCtx: N_CTX });
      }
      for (const b of BUILDS) await timedChat(engines[b]!, PROMPT, GEN); // warm-up: compute buffers, page faults
      const runs: Record<string, RunResult[]> = { mt: [], mt64: [] };
      for (let rep = 0; rep < opts.reps; rep++) {
        for (const b of rotate([...BUILDS], rep)) {
          await pause(300);
          runs[b]!.push(await timedChat(engines[b]!, PROMPT, GEN));
        }
      }
      const row: Record<string, number> = { threads };
      for (const b of BUILDS) {
        row[`${b}_prefill_tps`] = round(median(runs[b]!.map((r) => tps(r.promptTokens, r.ttftMs))));
        row[`${b}_decode_tps`] = round(median(runs[b]!.map((r) => tps(r.genTokens - 1, r.decodeMs))));
      }
      row.prefill_ratio = round(row.mt64_prefill_tps! / row.mt_prefill_tps!);
      row.decode_ratio = round(row.mt64_decode_tps! / row.mt_decode_tps!);
      opts.log(
        `${name}, ${threads} threads: prefill mt ${row.mt_prefill_tps} / mt64 ${row.mt64_prefill_tps} tok/s ` +
          `(${row.prefill_ratio}x), decode mt ${row.mt_decode_tps} / mt64 ${row.mt64_decode_tps} tok/s (${row.decode_ratio}x)`,
      );
      rows.push(row);
    } finally {
      for (const e of Object.values(engines)) await e.unload();
    }
  }
  return rows;
}
