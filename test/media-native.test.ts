// Hearth's wasm build against native llama.cpp (test/native/mtmd-probe.cpp, built by npm run build:server from the same
// pinned source): the same prompt with one image or audio clip gives the same media embeddings and the same logits
// after the prompt, within a bound far below what another image moves them by.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeBinary } from '../scripts/build-server.mjs';
import { LlamaContext } from '../src/backends/llamacpp/binding/context.ts';
import type { Llama } from '../src/backends/llamacpp/binding/llama.ts';
import { LlamaProjector, positionAt } from '../src/backends/llamacpp/binding/mtmd.ts';
import { LlamaModel } from '../src/backends/llamacpp/binding/model.ts';
import { testPng, testWav } from './fixtures/media.ts';
import { modelsDir } from './fixtures/models.ts';
import { ensureMultimodal, PROJECTORS, type ProjectorName } from './fixtures/projectors.ts';
import { maxDiff, openLlama, scale } from './helpers.ts';

/** Differences between the builds, relative to the largest value (measured up to 6.0e-4: docs/api.md, "Images and
 * audio"). */
const TOLERANCE = 5e-3;

interface Run {
  embd: Float32Array;
  logits: Float32Array;
}

const dir = mkdtempSync(join(tmpdir(), 'hearth-media-'));

function native(name: ProjectorName, file: string, prompt: string): Run {
  const { model } = PROJECTORS[name];
  const out = execFileSync(
    probeBinary,
    [join(modelsDir, `${model}.gguf`), join(modelsDir, `${name}.mmproj.gguf`), file, prompt, '1'],
    { encoding: 'utf8', maxBuffer: 1 << 28 },
  );
  const json = JSON.parse(out) as { embd: number[]; logits: number[] };
  return { embd: Float32Array.from(json.embd), logits: Float32Array.from(json.logits) };
}

/** The probe's steps through the wasm binding: tokenize with the media, encode, decode text and embeddings, logits. */
async function wasm(
  llama: Llama,
  name: ProjectorName,
  bytes: Uint8Array,
  kind: 'image' | 'audio',
  prompt: (marker: string) => string,
): Promise<Run> {
  const model = (await LlamaModel.load(llama, `/models/${PROJECTORS[name].model}.gguf`))!;
  const ctx = await LlamaContext.create(model, {
    nCtx: 2048,
    nBatch: 512,
    nUbatch: 512,
    nSeqMax: 1,
    threads: 1,
    typeK: 'f16',
    typeV: 'f16',
    flashAttn: 0,
  });
  const projector = (await LlamaProjector.load(llama, model, `/models/${name}.mmproj.gguf`, 1, 'test'))!;
  const hash = createHash('sha256').update(bytes).digest('hex');
  const p = projector.prompt(prompt(projector.marker), true, [{ kind, bytes, hash }]);
  try {
    let embd: Float32Array | null = null;
    let pos = 0;
    let last = -1;
    const spans = [...p.spans];
    while (pos < p.tokens.length) {
      const span = spans[0];
      if (span?.start === pos) {
        spans.shift();
        const out = await projector.encode(ctx, span);
        embd ??= projector.embeddings(out, span);
        expect(await projector.decode(ctx, span, out, 0, positionAt(p.tokens, pos))).toBe(0);
        pos = span.end;
        continue;
      }
      const end = Math.min(span?.start ?? p.tokens.length, pos + 512);
      const part = Array.from(p.tokens.subarray(pos, end));
      const at = positionAt(p.tokens, pos);
      expect(
        await ctx.decode(
          part,
          part.map((_, k) => at + k),
          part.map(() => 0),
          part.map((_, k) => end === p.tokens.length && k === part.length - 1),
        ),
      ).toBe(0);
      last = part.length - 1;
      pos = end;
    }
    return { embd: embd!, logits: ctx.logits(last) };
  } finally {
    p.free();
    projector.free();
    ctx.free();
    model.free();
  }
}

const rel = (a: Float32Array, b: Float32Array) => maxDiff(a, b) / scale(b);

describe.each([
  ['gemma3-vision', 'image'],
  ['smolvlm-vision', 'image'],
  ['qwen25vl-vision', 'image'],
  ['qwen3vl-vision', 'image'],
  ['qwen2a-audio', 'audio'],
] as Array<[ProjectorName, 'image' | 'audio']>)('%s: wasm equals native llama.cpp', (name, kind) => {
  let llama: Llama;
  beforeAll(async () => {
    if (!existsSync(probeBinary)) throw new Error(`${probeBinary} is missing: run "npm run build:server"`);
    await ensureMultimodal(name);
    llama = await openLlama();
  });
  afterAll(() => llama?.mod.FS.unmount('/models'));

  const media = (seed: number) => (kind === 'image' ? testPng(96, 80, seed) : testWav(1.5, 16000, seed));
  const prompt = (marker: string) => `<|im_start|>user\nWhat is this? ${marker}<|im_end|>\n<|im_start|>assistant\n`;

  it(`gives the same ${kind} embeddings and next-token logits, and another ${kind} moves both by far more`, async () => {
    const runs = [];
    for (const seed of [1, 2]) {
      const bytes = media(seed);
      const file = join(dir, `${name}-${seed}.${kind === 'image' ? 'png' : 'wav'}`);
      writeFileSync(file, bytes);
      runs.push({
        native: native(name, file, prompt('<__media__>')),
        wasm: await wasm(llama, name, bytes, kind, prompt),
      });
    }
    for (const r of runs) {
      expect(r.wasm.embd.length).toBe(r.native.embd.length);
      expect(rel(r.wasm.embd, r.native.embd)).toBeLessThan(TOLERANCE);
      expect(rel(r.wasm.logits, r.native.logits)).toBeLessThan(TOLERANCE);
    }
    // The bound means something: the other seed's media is far outside it.
    expect(rel(runs[1]!.native.embd, runs[0]!.native.embd)).toBeGreaterThan(20 * TOLERANCE);
    expect(rel(runs[1]!.native.logits, runs[0]!.native.logits)).toBeGreaterThan(5 * TOLERANCE);
    console.log(
      `[media-native] ${name}: embd ${runs.map((r) => rel(r.wasm.embd, r.native.embd).toExponential(2)).join(', ')}; ` +
        `logits ${runs.map((r) => rel(r.wasm.logits, r.native.logits).toExponential(2)).join(', ')}; other media ` +
        `${rel(runs[1]!.native.embd, runs[0]!.native.embd).toFixed(3)} / ${rel(runs[1]!.native.logits, runs[0]!.native.logits).toFixed(3)}`,
    );
  });
});
