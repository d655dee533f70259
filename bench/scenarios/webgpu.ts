// npm run bench -- webgpu --node [--json] [--reps N] [--threads 16] [--types q8_0,q4_k_m] [--model NAME]
// Hearth's GPU engine (the WebGPU build, every layer on the GPU) against Hearth's CPU engine (the threaded build) on
// the same machine, in one Node process, through the public API: prefill and decode tok/s of the benchmark model
// (Qwen2.5-0.5B shapes; Q8_0 and Q4_K_M unless --types or --model say otherwise), a ~124-token prompt, 64 generated
// tokens, nothing cached, the engines alternated. The GPU is Dawn for Node's adapter: here lavapipe (a CPU driver:
// a correctness-sized run), on a machine with a GPU that GPU (HEARTH_WEBGPU, HEARTH_DAWN_FLAGS: test/webgpu/dawn.ts).
import { spawnSync } from 'node:child_process';
import { chooseBuild } from '../../src/backends/llamacpp/worker/simd.ts';
import { createNodeEngine, type NodeEngine } from '../../src/node.ts';
import { ensureModel, type ModelName } from '../../test/fixtures/models.ts';
import { installDawn } from '../../test/webgpu/dawn.ts';
import { webgpuNode } from '../../scripts/webgpu-node.mjs';
import { median, pause, PROMPT, rotate, round, type ScenarioOptions } from '../common.ts';
import { NO_CACHE, type RunResult, timedChat } from '../timed-chat.ts';
import { takeTrace, traceWebGpu } from '../gpu-trace.ts';

const N_CTX = 1024;
const GEN = 64;
const ENGINES = ['gpu', 'cpu'] as const;

const tps = (tokens: number, ms: number) => (ms > 0 ? (tokens / ms) * 1000 : 0);

export async function webgpu(opts: ScenarioOptions): Promise<Array<Record<string, number>>> {
  if (!opts.node) throw new Error('bench webgpu runs in Node for now: add --node');
  if (!(globalThis.navigator as { gpu?: unknown } | undefined)?.gpu) {
    if (!process.env.HEARTH_WEBGPU) return rerunUnderDawn();
    await installDawn();
  }
  if (opts.trace) traceWebGpu();
  const models: ModelName[] = opts.model
    ? [opts.model as ModelName]
    : (opts.types ?? ['q8_0', 'q4_k_m']).map(
        (t) => (t === 'q8_0' ? 'bench-qwen2.5-0.5b' : `bench-qwen2.5-0.5b-${t}`) as ModelName,
      );
  const threads = opts.threads?.[0] ?? 16;
  const cpuBuild = chooseBuild(true, opts.simd ?? 'auto', `${threads} threads`);
  const rows: Array<Record<string, number>> = [];
  for (const name of models) {
    const path = await ensureModel(name);
    const gpu = await createNodeEngine({ variant: 'webgpu', cache: NO_CACHE, modelsDir: null });
    const cpu = await createNodeEngine({ variant: cpuBuild.variant, threads, cache: NO_CACHE, modelsDir: null });
    try {
      await gpu.load({ path }, { nCtx: N_CTX });
      await cpu.load({ path }, { nCtx: N_CTX });
      const info = await gpu.info();
      if (!info.gpu?.layers)
        throw new Error(`no layer of ${name} went to the GPU (${info.gpu?.adapter ?? 'no adapter'})`);
      opts.log(
        `${name}: GPU engine on ${info.gpu.adapter} (${info.gpu.layers}/${info.gpu.totalLayers} layers, ` +
          `${info.gpu.shaderPath} shaders) vs CPU engine (${cpuBuild.variant}, ${threads} threads), llama.cpp ${info.llamaBuild}`,
      );
      rows.push({ ...(await compare({ gpu, cpu }, opts)), threads });
    } finally {
      await gpu.unload();
      await cpu.unload();
    }
  }
  return rows;
}

async function compare(
  engines: Record<(typeof ENGINES)[number], NodeEngine>,
  opts: ScenarioOptions,
): Promise<Record<string, number>> {
  const run = (e: (typeof ENGINES)[number]) => timedChat(engines[e], PROMPT, GEN);
  // Warm-up: the GPU compiles its pipelines on first use; both engines allocate their compute buffers.
  const first = { gpu: await run('gpu'), cpu: await run('cpu') };
  const results: Record<string, RunResult[]> = { gpu: [], cpu: [] };
  for (let rep = 0; rep < opts.reps; rep++) {
    for (const e of rotate([...ENGINES], rep)) {
      await pause(300);
      results[e]!.push(await run(e));
    }
  }
  const row: Record<string, number> = {};
  for (const e of ENGINES) {
    const rs = results[e]!;
    row[`${e}_prefill_tps`] = round(median(rs.map((r) => tps(r.promptTokens, r.ttftMs))));
    row[`${e}_decode_tps`] = round(median(rs.map((r) => tps(r.genTokens - 1, r.decodeMs))));
    opts.log(
      `  ${e} prefill ${row[`${e}_prefill_tps`]!.toFixed(1).padStart(7)} tok/s (${rs[0]!.promptTokens} tokens)` +
        `   decode ${row[`${e}_decode_tps`]!.toFixed(1).padStart(6)} tok/s (${rs[0]!.genTokens} tokens)`,
    );
  }
  row.prompt_tokens = results.gpu![0]!.promptTokens;
  row.gen_tokens = results.gpu![0]!.genTokens;
  row.prefill_ratio = round(row.gpu_prefill_tps! / row.cpu_prefill_tps!);
  row.decode_ratio = round(row.gpu_decode_tps! / row.cpu_decode_tps!);
  // Greedy answers of random weights: the same text from both engines is a sign (not the proof: test/webgpu) of the
  // GPU computing what the CPU does; the length they share says how far they went together.
  row.same_chars = commonPrefix(first.gpu.text ?? '', first.cpu.text ?? '');
  row.answer_chars = (first.cpu.text ?? '').length;
  row.reps = opts.reps;
  if (opts.trace) await traceRun(engines.gpu, opts);
  opts.log(
    `  GPU/CPU: prefill ${row.prefill_ratio}x, decode ${row.decode_ratio}x; answers alike for ${row.same_chars}/${row.answer_chars} characters`,
  );
  return row;
}

/** One more prefill and decode on the GPU engine, its WebGPU calls counted and timed per phase (--trace). */
async function traceRun(engine: NodeEngine, opts: ScenarioOptions) {
  takeTrace();
  // The prompt alone (one token generated): the prefill's calls.
  const prefill = await timedChat(engine, PROMPT, 1);
  const show = (what: string, ms: number, per: number) => {
    opts.log(`  ${what}: ${ms.toFixed(1)} ms; WebGPU calls per ${per > 1 ? 'token' : 'run'}:`);
    for (const t of takeTrace().slice(0, 12)) {
      opts.log(
        `    ${t.call.padEnd(44)} ${(t.calls / per).toFixed(1).padStart(7)} calls ${(t.ms / per).toFixed(2).padStart(8)} ms`,
      );
    }
  };
  show(`prefill of ${prefill.promptTokens} tokens`, prefill.ttftMs, 1);
  const both = await timedChat(engine, PROMPT, GEN);
  const perToken = both.decodeMs / (both.genTokens - 1);
  // Both phases again: what the decode adds is the whole minus one prefill; shown per generated token.
  show(
    `decode, ${perToken.toFixed(2)} ms per token (prefill included below, spread over ${both.genTokens} tokens)`,
    both.decodeMs,
    both.genTokens,
  );
}

function commonPrefix(a: string, b: string): number {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}

/** This command again, in Node 26 with Dawn over lavapipe (scripts/webgpu-node.mjs). */
function rerunUnderDawn(): never {
  const { node, env } = webgpuNode();
  const r = spawnSync(node, ['--import', 'tsx', ...process.argv.slice(1)], { stdio: 'inherit', env });
  process.exit(r.status ?? 1);
}
