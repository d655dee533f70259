// npm run bench -- webgpu [--node] [--json] [--reps N] [--threads 16] [--types q8_0,q4_k_m] [--model NAME] [--trace]
// [--large] [--long]
// Hearth's GPU engine (the WebGPU build, every layer on the GPU) against Hearth's CPU engine (the threaded build) on
// the same machine, through the public API: prefill and decode tok/s of the benchmark model (Qwen2.5-0.5B shapes;
// Q8_0 and Q4_K_M unless --types or --model say otherwise), a ~124-token prompt, 64 generated tokens, nothing cached,
// the engines alternated. In a browser (the default: Debian's firefox-esr with WebGPU on, the browser here whose
// adapter has shader-f16) wllama's WebGPU runs beside them, where it can, through Hearth's 'wllama' backend. With
// --node, in one Node process on Dawn for Node's adapter: here lavapipe (a CPU driver: a correctness-sized run), on a
// machine with a GPU that GPU (HEARTH_WEBGPU, HEARTH_DAWN_FLAGS: test/webgpu/dawn.ts); where that adapter has
// shader-f16, the GPU engine's f32 path (`shaderF16: false`) runs as a third engine, `gpu_f32`, with its ratios to the
// f16 path (f32_path_prefill_ratio, f32_path_decode_ratio); where it has subgroup matrices (Dawn's
// allow_unsafe_apis), the register-tiled shaders run as `gpu_tiled` (subgroup_matrix_prefill_ratio, _decode_ratio); and
// native llama.cpp with Vulkan runs on the same adapter where it is built (npm run build:native-vulkan): native_*
// fields and the GPU engine's ratios to it. --large adds Llama-3.2-1B's and Qwen2.5-3B's shapes at Q4_K_M; --long
// (Node) also times a ~512-token prompt's prefill (long_* fields); --trace counts the GPU engine's WebGPU calls per
// prompt and per decode token (trace_* fields), in Node and in Firefox (its worker started traced).
import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { chooseBuild } from '../../src/backends/llamacpp/worker/simd.ts';
import { createNodeEngine, type NodeEngine } from '../../src/node.ts';
import type { BackendName, EngineInfo } from '../../src/types.ts';
import { ensureModel, type ModelName } from '../../test/fixtures/models.ts';
import { installDawn } from '../../test/webgpu/dawn.ts';
import { webgpuNode } from '../../scripts/webgpu-node.mjs';
import { LONG_PROMPT, median, pause, PROMPT, rotate, round, type ScenarioOptions } from '../common.ts';
import { llamaBenchPath, runNativeVulkan } from '../native-vulkan.ts';
import { NO_CACHE, type RunResult, timedChat } from '../timed-chat.ts';
import { type GpuTrace, takeTrace, traceCounts, traceDiff, traceWebGpu } from '../../test/webgpu/gpu-trace.ts';

const N_CTX = 1024;
const GEN = 64;
type EngineName = 'gpu' | 'cpu' | 'wllama' | 'gpu_f32' | 'gpu_tiled';
/** Firefox ESR's WebGPU (wgpu over Vulkan: lavapipe here), as the e2e project firefox-webgpu turns it on. */
const FIREFOX_WEBGPU = { 'dom.webgpu.enabled': true, 'gfx.webgpu.ignore-blocklist': true };

const tps = (tokens: number, ms: number) => (ms > 0 ? (tokens / ms) * 1000 : 0);

export async function webgpu(opts: ScenarioOptions): Promise<Array<Record<string, number>>> {
  if (!opts.node) return inBrowser(opts);
  if (!(globalThis.navigator as { gpu?: unknown } | undefined)?.gpu) {
    if (!process.env.HEARTH_WEBGPU) return rerunUnderDawn();
    await installDawn();
  }
  if (opts.trace) traceWebGpu();
  const threads = opts.threads?.[0] ?? 16;
  const cpuBuild = chooseBuild(true, opts.simd ?? 'auto', `${threads} threads`);
  const rows: Array<Record<string, number>> = [];
  for (const name of benchModels(opts)) {
    const path = await ensureModel(name);
    const gpu = await createNodeEngine({ variant: 'webgpu', cache: NO_CACHE, modelsDir: null });
    const cpu = await createNodeEngine({ variant: cpuBuild.variant, threads, cache: NO_CACHE, modelsDir: null });
    const engines: Partial<Record<EngineName, NodeEngine>> = { gpu, cpu };
    try {
      await gpu.load({ path }, { nCtx: N_CTX });
      await cpu.load({ path }, { nCtx: N_CTX });
      const info = await gpu.info();
      if (!info.gpu?.layers)
        throw new Error(`no layer of ${name} went to the GPU (${info.gpu?.adapter ?? 'no adapter'})`);
      opts.log(
        `${name}: GPU engine on ${info.gpu.adapter} (${info.gpu.layers}/${info.gpu.totalLayers} layers, ` +
          `${info.gpu.shaderPath} shaders${info.gpu.subgroupMatrix ? ', subgroup matrices' : ''}) vs CPU engine (${cpuBuild.variant}, ${threads} threads), llama.cpp ${info.llamaBuild}`,
      );
      // Where the adapter has shader-f16, the f32 path (shaders made without it) runs beside, on the same GPU: what an
      // adapter without shader-f16 (NVIDIA on Linux without Dawn's toggle) would get, as a ratio to the f16 path.
      if (info.gpu.shaderPath === 'f16') {
        const f32 = await createNodeEngine({ variant: 'webgpu', cache: NO_CACHE, modelsDir: null, shaderF16: false });
        await f32.load({ path }, { nCtx: N_CTX });
        engines.gpu_f32 = f32;
      }
      // Where the adapter's matrix units run the matrix products, the register-tiled shaders run beside (what the f16
      // path did before, and what a browser without the feature gets), as a ratio.
      if (info.gpu.subgroupMatrix) {
        const tiled = await createNodeEngine({
          variant: 'webgpu',
          cache: NO_CACHE,
          modelsDir: null,
          subgroupMatrix: false,
        });
        await tiled.load({ path }, { nCtx: N_CTX });
        engines.gpu_tiled = tiled;
      }
      const names = Object.keys(engines) as EngineName[];
      const row = await compare(names, (e) => timedChat(engines[e]!, PROMPT, GEN), opts);
      const long = opts.long ? await longPrefill(names, engines, opts) : {};
      const native = nativeRun(path, info, { ...row, ...long }, opts);
      const trace = opts.trace
        ? await traceRun(
            (max) => timedChat(gpu, PROMPT, max),
            async () => takeTrace(),
            opts,
          )
        : {};
      rows.push({ ...row, ...long, ...native, ...trace, threads });
    } finally {
      for (const e of Object.values(engines)) await e.unload();
    }
  }
  return rows;
}

function benchModels(opts: ScenarioOptions): ModelName[] {
  if (opts.model) return [opts.model as ModelName];
  const models = (opts.types ?? ['q8_0', 'q4_k_m']).map(
    (t) => (t === 'q8_0' ? 'bench-qwen2.5-0.5b' : `bench-qwen2.5-0.5b-${t}`) as ModelName,
  );
  if (opts.large) models.push('bench-llama3.2-1b-q4_k_m', 'bench-qwen2.5-3b-q4_k_m');
  return models;
}

/**
 * Native llama.cpp with Vulkan on the same adapter (bench/native-vulkan.ts), when it is built: its prefill of the same
 * prompt lengths and decode of GEN tokens, and the GPU engine's ratios to it (native_* and long_native_* fields).
 */
function nativeRun(
  path: string,
  info: EngineInfo,
  row: Record<string, number>,
  opts: ScenarioOptions,
): Record<string, number> {
  const bin = llamaBenchPath();
  if (!bin) {
    opts.log('  native Vulkan llama.cpp: not built (npm run build:native-vulkan), left out');
    return {};
  }
  const prompts = [row.prompt_tokens!, ...(row.long_prompt_tokens ? [row.long_prompt_tokens] : [])];
  const kv = info.kvCache!;
  const n = runNativeVulkan(bin, path, {
    prompts,
    gen: GEN,
    reps: opts.reps,
    flashAttention: kv.flashAttention,
    typeK: kv.typeK,
    typeV: kv.typeV,
  });
  const out: Record<string, number> = {
    native_prefill_tps: round(n.prefillTps[prompts[0]!] ?? 0),
    native_decode_tps: round(n.decodeTps),
  };
  out.prefill_ratio_vs_native = round(row.gpu_prefill_tps! / out.native_prefill_tps!);
  out.decode_ratio_vs_native = round(row.gpu_decode_tps! / out.native_decode_tps!);
  if (prompts[1]) {
    out.long_native_prefill_tps = round(n.prefillTps[prompts[1]] ?? 0);
    out.long_prefill_ratio_vs_native = round(row.long_gpu_prefill_tps! / out.long_native_prefill_tps!);
  }
  opts.log(
    `  native llama.cpp (Vulkan, ${n.device}): prefill ${out.native_prefill_tps} tok/s, decode ${out.native_decode_tps} ` +
      `tok/s; GPU engine / native: prefill ${out.prefill_ratio_vs_native}x, decode ${out.decode_ratio_vs_native}x` +
      (prompts[1]
        ? `; the long prompt: ${out.long_native_prefill_tps} tok/s, ${out.long_prefill_ratio_vs_native}x`
        : ''),
  );
  return out;
}

/** The engines' prefill of LONG_PROMPT (one token generated), as long_* fields: a prompt that fills the GPU. */
async function longPrefill(
  names: EngineName[],
  engines: Partial<Record<EngineName, NodeEngine>>,
  opts: ScenarioOptions,
): Promise<Record<string, number>> {
  opts.log('  the long prompt:');
  const row = await compare(names, (e) => timedChat(engines[e]!, LONG_PROMPT, 1), opts);
  const long: Record<string, number> = {};
  for (const [k, v] of Object.entries(row)) if (/prefill|prompt_tokens/.test(k)) long[`long_${k}`] = v;
  return long;
}

/** The three engines in one Firefox page, on its adapter; wllama left out (and said why) where it cannot run. */
async function inBrowser(opts: ScenarioOptions): Promise<Array<Record<string, number>>> {
  const threads = opts.threads?.[0] ?? availableParallelism();
  // Imported here: the browser tooling (vite, puppeteer) is not on the GPU machine, where only --node runs.
  const { openFirefoxBenchPage } = await import('../browser.ts');
  const b = await openFirefoxBenchPage(FIREFOX_WEBGPU);
  const backend: Partial<Record<EngineName, BackendName>> = { gpu: 'webgpu', cpu: 'wasm', wllama: 'wllama' };
  const rows: Array<Record<string, number>> = [];
  try {
    for (const name of benchModels(opts)) {
      await ensureModel(name);
      const url = `/test-models/${name}.gguf`;
      if (opts.trace) await b.call('traceGpu');
      const gpu = await b.call('loadBackend', url, 'webgpu', 1, N_CTX);
      if (gpu.backend !== 'webgpu' || !gpu.gpu?.layers) {
        throw new Error(`the GPU engine did not take ${name}: ${gpu.selection?.reason ?? 'no reason given'}`);
      }
      const cpu = await b.call('loadBackend', url, 'wasm', threads, N_CTX);
      const engines: EngineName[] = ['gpu', 'cpu'];
      let wllama = 'not run';
      try {
        const w = await b.call('loadBackend', url, 'wllama', threads, N_CTX);
        wllama = w.selection?.reason ?? 'loaded';
        engines.push('wllama');
      } catch (err) {
        wllama = `could not load it: ${(err as Error).message.split('\n')[0]}`;
      }
      opts.log(
        `${name}: GPU engine on ${gpu.gpu.adapter} (${gpu.gpu.layers}/${gpu.gpu.totalLayers} layers) vs CPU engine ` +
          `(${cpu.build}, ${threads} threads), llama.cpp ${gpu.llamaBuild}; wllama: ${wllama}`,
      );
      const run = async (e: EngineName) => {
        await b.call('selectBackend', backend[e]!);
        const t0 = performance.now();
        const r = await b.call('runHearth', PROMPT, GEN);
        opts.log(`    (${e}: ${((performance.now() - t0) / 1000).toFixed(1)} s)`);
        return r;
      };
      const row = await compare(engines, run, opts);
      let trace = {};
      if (opts.trace) {
        await b.call('selectBackend', 'webgpu');
        trace = await traceRun(
          (max) => b.call('runHearth', PROMPT, max),
          () => b.call('takeGpuTrace'),
          opts,
        );
      }
      rows.push({ ...row, ...trace, threads });
    }
  } finally {
    await b.close();
  }
  return rows;
}

/**
 * `engines` (the GPU engine first, then the CPU engine, then any other) run by `run` after a warm-up each, alternated
 * opts.reps times; medians, and the GPU engine's ratios to the others.
 */
async function compare(
  engines: EngineName[],
  run: (e: EngineName) => Promise<RunResult>,
  opts: ScenarioOptions,
): Promise<Record<string, number>> {
  // Warm-up: the GPU compiles its pipelines on first use; every engine allocates its compute buffers.
  const first: Partial<Record<EngineName, RunResult>> = {};
  for (const e of engines) first[e] = await run(e);
  const results: Partial<Record<EngineName, RunResult[]>> = {};
  for (let rep = 0; rep < opts.reps; rep++) {
    for (const e of rotate([...engines], rep)) {
      await pause(300);
      (results[e] ??= []).push(await run(e));
    }
  }
  const row: Record<string, number> = {};
  for (const e of engines) {
    const rs = results[e]!;
    row[`${e}_prefill_tps`] = round(median(rs.map((r) => tps(r.promptTokens, r.ttftMs))));
    row[`${e}_decode_tps`] = round(median(rs.map((r) => tps(r.genTokens - 1, r.decodeMs))));
    opts.log(
      `  ${e.padEnd(6)} prefill ${row[`${e}_prefill_tps`]!.toFixed(1).padStart(7)} tok/s (${rs[0]!.promptTokens} tokens)` +
        `   decode ${row[`${e}_decode_tps`]!.toFixed(1).padStart(6)} tok/s (${rs[0]!.genTokens} tokens)`,
    );
  }
  row.prompt_tokens = results.gpu![0]!.promptTokens;
  row.gen_tokens = results.gpu![0]!.genTokens;
  for (const e of engines.slice(1)) {
    const vs = e === 'cpu' ? '' : `_vs_${e}`;
    row[`prefill_ratio${vs}`] = round(row.gpu_prefill_tps! / row[`${e}_prefill_tps`]!);
    row[`decode_ratio${vs}`] = round(row.gpu_decode_tps! / row[`${e}_decode_tps`]!);
  }
  if (row.gpu_f32_decode_tps) {
    row.f32_path_prefill_ratio = round(row.gpu_f32_prefill_tps! / row.gpu_prefill_tps!);
    row.f32_path_decode_ratio = round(row.gpu_f32_decode_tps! / row.gpu_decode_tps!);
    opts.log(`  f32 path / f16 path: prefill ${row.f32_path_prefill_ratio}x, decode ${row.f32_path_decode_ratio}x`);
  }
  if (row.gpu_tiled_decode_tps) {
    row.subgroup_matrix_prefill_ratio = round(row.gpu_prefill_tps! / row.gpu_tiled_prefill_tps!);
    row.subgroup_matrix_decode_ratio = round(row.gpu_decode_tps! / row.gpu_tiled_decode_tps!);
    opts.log(
      `  subgroup matrices / register-tiled: prefill ${row.subgroup_matrix_prefill_ratio}x, decode ${row.subgroup_matrix_decode_ratio}x`,
    );
  }
  // Greedy answers of random weights: the same text from both engines is a sign (not the proof: test/webgpu) of the
  // GPU computing what the CPU does; the length they share says how far they went together.
  row.same_chars = commonPrefix(first.gpu!.text ?? '', first.cpu!.text ?? '');
  row.answer_chars = (first.cpu!.text ?? '').length;
  row.reps = opts.reps;
  opts.log(
    `  GPU/CPU: prefill ${row.prefill_ratio}x, decode ${row.decode_ratio}x; answers alike for ${row.same_chars}/${row.answer_chars} characters` +
      (row.decode_ratio_vs_wllama
        ? `; GPU/wllama: prefill ${row.prefill_ratio_vs_wllama}x, decode ${row.decode_ratio_vs_wllama}x`
        : ''),
  );
  return row;
}

/**
 * One more prefill and decode on the GPU engine with every WebGPU call counted and timed (--trace), per prompt and per
 * decode token: the prompt alone (one token generated), then the prompt and GEN tokens; a decode token's counts are
 * the second run less the first, over the tokens it added. Returned as trace_prefill_* and trace_decode_* fields.
 */
async function traceRun(
  run: (maxTokens: number) => Promise<RunResult>,
  take: () => Promise<GpuTrace>,
  opts: ScenarioOptions,
): Promise<Record<string, number>> {
  await take();
  const prefill = await run(1);
  const p = await take();
  const both = await run(GEN);
  const decode = traceCounts(traceDiff(await take(), p), both.genTokens - 1, both.decodeMs);
  const counts = { prefill: traceCounts(p, 1, prefill.ttftMs), decode };
  const row: Record<string, number> = {};
  for (const [phase, c] of Object.entries(counts)) {
    const unit = phase === 'prefill' ? `the ${prefill.promptTokens}-token prompt` : 'a decode token';
    opts.log(
      `  trace, ${unit}: ${c.ms} ms = ${c.gpuWaitMs} waiting for the GPU (${c.suspensions} waits) + ${c.webgpuMs} in ` +
        `WebGPU's calls + ${c.wasmMs} in the wasm and the engine's JS; ${c.calls} WebGPU calls: ${c.dispatches} ` +
        `dispatches, ${c.setPipeline} setPipeline, ${c.setBindGroup} setBindGroup (${c.repeatedSets} repeated), ` +
        `${c.bindGroupsCreated} bind groups created, ${c.encoders} encoders, ${c.passes} passes, ${c.submits} ` +
        `submits, ${c.writeBuffer} writeBuffer, ${c.mapAsync} mapAsync; ${c.replays} graphs replayed`,
    );
    for (const [k, v] of Object.entries(c))
      row[`trace_${phase}_${k.replace(/[A-Z]/g, (m) => `_${m.toLowerCase()}`)}`] = v;
  }
  return row;
}

function commonPrefix(a: string, b: string): number {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}

/** This command again, in Node 26 with Dawn over lavapipe (scripts/webgpu-node.mjs). */
export function rerunUnderDawn(): never {
  const { node, env } = webgpuNode();
  const r = spawnSync(node, ['--import', 'tsx', ...process.argv.slice(1)], { stdio: 'inherit', env });
  process.exit(r.status ?? 1);
}
