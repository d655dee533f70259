// Native llama.cpp on the same GPU: llama.cpp's own llama-bench with its Vulkan backend, built from the pinned source
// (npm run build:native-vulkan; on the GPU machine the binary scripts/device-bench.mjs carried, HEARTH_LLAMA_BENCH).
// It runs on the Vulkan device this process sees (VK_ICD_FILENAMES / VK_DRIVER_FILES: lavapipe here, the NVIDIA
// driver there), every layer on it, with the GPU engine's KV cache types (f16 where the engine's is f32, which
// llama-bench cannot make) and flash-attention setting. Its prompt is
// llama-bench's own tokens of the same count: the speed of a prompt does not depend on which tokens it holds.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir } from '../scripts/llama-source.mjs';

export interface NativeVulkanRun {
  /** tok/s, llama-bench's mean over its repetitions, per prompt length asked. */
  prefillTps: Record<number, number>;
  decodeTps: number;
  /** The Vulkan device llama.cpp used, as it names it. */
  device: string;
}

export function llamaBenchPath(): string | null {
  const path = process.env.HEARTH_LLAMA_BENCH ?? join(cacheDir, 'native-vulkan', 'llama-bench');
  return existsSync(path) ? path : null;
}

export function runNativeVulkan(
  bin: string,
  model: string,
  o: { prompts: number[]; gen: number; reps: number; flashAttention: boolean; typeK: string; typeV: string },
): NativeVulkanRun {
  const args = [
    ['-m', model],
    ['-p', o.prompts.join(',')],
    ['-n', String(o.gen)],
    ['-ngl', '999'],
    ['-r', String(Math.max(1, o.reps))],
    ['-fa', o.flashAttention ? '1' : '0'],
    // llama-bench has no f32 cache: an f32 one (Hearth's default) runs as llama.cpp's default, f16.
    ...(o.typeK === 'f32' ? [] : [['-ctk', o.typeK]]),
    ...(o.typeV === 'f32' ? [] : [['-ctv', o.typeV]]),
    ['-o', 'json'],
  ].flat();
  // The first Vulkan device, named: llama.cpp otherwise skips a device of CPU type (lavapipe), and on a machine with
  // one GPU it is the one Dawn takes.
  const env = { ...process.env, GGML_VK_VISIBLE_DEVICES: process.env.GGML_VK_VISIBLE_DEVICES ?? '0' };
  const r = spawnSync(bin, args, { encoding: 'utf8', maxBuffer: 64 << 20, env });
  if (r.status !== 0) {
    const why = (r.stderr || r.error?.message || '').trim().split('\n').slice(-3).join(' | ');
    throw new Error(`llama-bench (Vulkan) failed: ${why}`);
  }
  const rows = JSON.parse(r.stdout) as Array<{ n_prompt: number; n_gen: number; avg_ts: number; gpu_info?: string }>;
  const prefillTps: Record<number, number> = {};
  let decodeTps = 0;
  for (const row of rows) {
    if (row.n_gen === 0) prefillTps[row.n_prompt] = row.avg_ts;
    else if (row.n_prompt === 0) decodeTps = row.avg_ts;
  }
  const device = /ggml_vulkan: 0 = ([^|\n]+)/.exec(r.stderr)?.[1]?.trim() || rows[0]?.gpu_info || 'Vulkan device 0';
  return { prefillTps, decodeTps, device };
}
