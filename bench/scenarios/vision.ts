// npm run bench -- vision [--model qwen25vl] [--json] [--reps N]
// An image in a conversation, on SmolVLM-256M's shapes (bench-smolvlm-256m + bench-smolvlm-vision, Q8_0, random
// weights; a 512 × 512 image is one 64-token tile) or, with --model qwen25vl, Qwen2.5-VL-3B's vision encoder with
// M-RoPE positions (bench-qwen25vl-vision + bench-qwen25vl-0.5b; a 224 × 224 image is 64 tokens on 8 positions), in
// Chromium at 2 threads against native llama.cpp (the media probe of npm run build:server, same libmtmd, 2 threads):
// - image_encode_ms: the projector's encode of the image (timings.media_ms; the probe's own timer natively);
// - followup_cold_ms: time to the first token of the turn after the image on an engine without cache (it reads the
//   image and the whole conversation), followup_cached_ms the same turn on the engine that answered the image (its
//   KV cells kept), and their ratio;
// - restored_ms: that turn after a page reload, its state read back from IndexedDB (no encoding);
// - decode_mtmd_ms vs decode_browser_ms: a 1920 × 1080 PNG (a screenshot) decoded by libmtmd's stb_image in the wasm
//   build (Node's V8, single thread: the engine's own path) and by the browser's createImageBitmap + getImageData.
// Medians of --reps (default 3).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { probeBinary } from '../../scripts/build-server.mjs';
import { LlamaProjector } from '../../src/backends/llamacpp/binding/mtmd.ts';
import { LlamaModel } from '../../src/backends/llamacpp/binding/model.ts';
import { openLlama } from '../../test/helpers.ts';
import type { ChatMessage } from '../../src/types.ts';
import { testPng } from '../../test/fixtures/media.ts';
import { modelsDir } from '../../test/fixtures/models.ts';
import { ensureMultimodal, PROJECTORS } from '../../test/fixtures/projectors.ts';
import { openBenchPage } from '../browser.ts';
import { median, round, type ScenarioOptions } from '../common.ts';

const PAIRS = {
  smolvlm: { name: 'bench-smolvlm-vision', size: 512 },
  qwen25vl: { name: 'bench-qwen25vl-vision', size: 224 },
} as const;
const THREADS = 2;
const N_CTX = 4096;
const SYSTEM =
  'You are a careful assistant. Describe images plainly, name what you see, and answer follow-up questions.';

export async function vision(opts: ScenarioOptions) {
  if (!existsSync(probeBinary)) throw new Error(`${probeBinary} is missing: run "npm run build:server" first`);
  const pair = opts.model ?? 'smolvlm';
  if (!(pair in PAIRS)) throw new Error(`--model takes ${Object.keys(PAIRS).join(' or ')}, not ${pair}`);
  const { name: NAME, size: SIZE } = PAIRS[pair as keyof typeof PAIRS];
  const { model } = await ensureMultimodal(NAME);
  const png = testPng(SIZE, SIZE, 7);
  const dir = mkdtempSync(join(tmpdir(), 'hearth-vision-'));
  const file = join(dir, 'image.png');
  writeFileSync(file, png);

  // Native: the probe's encode time, the same image, the same threads.
  const nativeMs: number[] = [];
  for (let rep = 0; rep < opts.reps; rep++) {
    const out = execFileSync(
      probeBinary,
      [model, join(modelsDir, `${NAME}.mmproj.gguf`), file, '<__media__>\nWhat is this?', String(THREADS)],
      { encoding: 'utf8', maxBuffer: 1 << 28 },
    );
    nativeMs.push((JSON.parse(out) as { encode_ms: number }).encode_ms);
    opts.log(`  native encode: ${round(nativeMs.at(-1)!)} ms`);
  }

  const url = `/test-models/${PROJECTORS[NAME].model}.gguf`;
  const projector = `/test-models/${NAME}.mmproj.gguf`;
  const image = {
    type: 'image_url' as const,
    image_url: { url: `data:image/png;base64,${Buffer.from(png).toString('base64')}` },
  };
  const first: ChatMessage[] = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: [image, { type: 'text', text: 'What is in this picture?' }] },
  ];
  const rows: Record<string, number[]> = { encode: [], cold: [], cached: [], restored: [] };
  const b = await openBenchPage();
  try {
    for (let rep = 0; rep < opts.reps; rep++) {
      const id = `vision-${rep}`;
      const info = await b.call(
        'loadHearth',
        url,
        THREADS,
        N_CTX,
        { persistent: true },
        undefined,
        'auto',
        undefined,
        projector,
      );
      if (rep === 0) {
        opts.log(
          `hearth ${info.build} build, ${info.threads} threads, llama.cpp ${info.llamaBuild}, input ${info.input.join('+')}`,
        );
      }
      const r1 = await b.call('runHearth', first, 16, id);
      rows.encode!.push(r1.mediaMs!);
      const followUp: ChatMessage[] = [
        ...first,
        { role: 'assistant', content: r1.text! },
        { role: 'user', content: `Which colours are there? (${rep})` },
      ];
      const cached = await b.call('runHearth', followUp, 4, id);
      if (cached.mediaMs) throw new Error('the cached follow-up encoded the image again');
      rows.cached!.push(cached.ttftMs);
      await b.call('flushHearth');

      await b.reload();
      await b.call('loadHearth', url, THREADS, N_CTX, { persistent: true }, undefined, 'auto', undefined, projector);
      const again: ChatMessage[] = [
        ...followUp.slice(0, -1),
        { role: 'user', content: `Which shapes are there? (${rep})` },
      ];
      const restored = await b.call('runHearth', again, 4, id);
      if (restored.cacheSource !== 'indexeddb' || restored.mediaMs) {
        throw new Error(
          `after the reload the follow-up came from ${restored.cacheSource} and encoded for ${restored.mediaMs} ms`,
        );
      }
      rows.restored!.push(restored.ttftMs);

      await b.call('loadHearth', url, THREADS, N_CTX, null, undefined, 'auto', undefined, projector);
      const cold = await b.call('runHearth', again, 4);
      rows.cold!.push(cold.ttftMs);
      opts.log(
        `  rep ${rep + 1}: encode ${round(r1.mediaMs!)} ms; follow-up cold ${round(cold.ttftMs)} ms (${cold.promptTokens} tokens, ` +
          `encode ${round(cold.mediaMs!)} ms), cached ${round(cached.ttftMs)} ms, after reload ${round(restored.ttftMs)} ms ` +
          `(${restored.cachedTokens} of ${restored.promptTokens} tokens restored)`,
      );
      await b.call('unload');
    }
  } finally {
    await b.close();
  }
  // Decoding a screenshot: the engine's decoder (stb_image in wasm) and the browser's.
  const shot = testPng(1920, 1080, 8);
  const decode = { mtmd: await mtmdDecodeMs(model, NAME, shot, opts.reps), browser: [] as number[] };
  const page = await openBenchPage();
  try {
    for (let rep = 0; rep < opts.reps; rep++) {
      decode.browser.push(await page.call('decodeImage', Buffer.from(shot).toString('base64')));
    }
  } finally {
    await page.close();
  }
  opts.log(
    `  decoding a 1920 x 1080 PNG: libmtmd (wasm, stb_image) ${round(median(decode.mtmd))} ms, browser ${round(median(decode.browser))} ms`,
  );
  const m = (k: string) => round(median(rows[k]!));
  opts.log(`  model: ${PROJECTORS[NAME].model} + ${NAME}`);
  const row = {
    threads: THREADS,
    reps: opts.reps,
    image_px: SIZE,
    image_encode_ms: m('encode'),
    image_encode_native_ms: round(median(nativeMs)),
    encode_speed_vs_native: round(median(nativeMs) / median(rows.encode!)),
    followup_cold_ms: m('cold'),
    followup_cached_ms: m('cached'),
    ratio: round(median(rows.cold!) / median(rows.cached!)),
    restored_ms: m('restored'),
    restored_ratio: round(median(rows.cold!) / median(rows.restored!)),
    decode_mtmd_ms: round(median(decode.mtmd)),
    decode_browser_ms: round(median(decode.browser)),
  };
  return [row];
}

/** libmtmd's decoder alone (hearth_bitmap_from_file: stb_image), in the single-thread wasm build under Node. */
async function mtmdDecodeMs(modelPath: string, NAME: string, png: Uint8Array, reps: number): Promise<number[]> {
  const llama = await openLlama();
  const model = (await LlamaModel.load(llama, `/models/${modelPath.split('/').pop()}`))!;
  const projector = (await LlamaProjector.load(llama, model, `/models/${NAME}.mmproj.gguf`, 1, 'bench'))!;
  const times: number[] = [];
  try {
    for (let rep = 0; rep < reps; rep++) {
      llama.withBytes(png, (p, len) => {
        const t0 = performance.now();
        const bitmap = llama.mod._hearth_bitmap_from_file(projector.ptr, p, len);
        times.push(performance.now() - t0);
        if (!bitmap) throw new Error('libmtmd could not decode the PNG');
        llama.mod._hearth_bitmap_free(bitmap);
      });
    }
  } finally {
    projector.free();
    model.free();
  }
  return times;
}
