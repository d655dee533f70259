// "Answers like a cold engine", measured where a corrupted state would show: the tokens chosen and the
// log-probabilities of the likeliest tokens at every step, not the text (the '-hello' models say "Hello, world!" to
// any prompt). Plain data, so the unit tests (Vitest) and the browser tests (Playwright) assert on it alike.
import type { ChatCompletion, TopLogprob } from '../src/types.ts';

/** What a request asks for so that its answer can be compared. */
export const COMPARABLE = { logprobs: true, top_logprobs: 20 } as const;

/** Equal requests on a cached and a cold engine, or batched and alone: llama.cpp's results depend on how tokens are
 * split into batches, by up to 1.1e-3 here (gemma3-hello, four requests decoded together; < 1e-5 on most). */
export const LOGPROB_TOLERANCE = 2e-3;

/** The same, for prompts with an image or audio clip (test/media.test.ts, e2e/media.spec.ts): a media chunk is decoded
 * apart from the text around it (non-causally for Gemma 3), which moves the logits more with the cache's occupancy —
 * measured up to 2.5e-3 between an engine that holds other conversations and one that holds none. */
export const MEDIA_LOGPROB_TOLERANCE = 5e-3;

/**
 * The GPU engine against the CPU engine (unquantized models; test/webgpu): the largest difference allowed between
 * their log-probabilities of one of the top tokens. The GPU backend multiplies in f16 where the CPU build keeps f32,
 * and sums in another order: measured up to 0.0045 on the architecture fixtures and 0.026 on qwen2-hello-256 (256
 * wide, random weights: the most sensitive). A wrong kernel moves them by whole units and changes the tokens.
 */
export const GPU_LOGPROB_TOLERANCE = 0.05;

/**
 * Hearth's CPU engine against native llama.cpp on the CPU (x86), on the 4.32 GiB f32 model past the heap (test/large):
 * the two sum each f32 dot product in another order (SIMD128's 4 lanes; native AVX2's 8 with FMA, in tinyBLAS's
 * tiles), which over 18 random layers of 2048 moves the top log-probabilities by up to 0.030 (measured, memory64
 * build). A tensor read from a wrong file offset moves them by whole units and changes the tokens.
 */
export const NATIVE_LOGPROB_TOLERANCE = GPU_LOGPROB_TOLERANCE;

/**
 * Quantized models on the GPU engine: the two backends multiply them differently (the CPU quantizes the activations to
 * 8 bits too, the GPU multiplies dequantized weights with f16/f32 activations), which on qwen2-hello-256 moves its
 * log-probabilities by 0.12–0.85 between them — as much as quantizing the weights does (0.28 for Q8_0, 2.3 for Q4_0,
 * against the f32 model). So each is measured against the f32 model it was quantized from: the GPU may stray from it at
 * most QUANT_RATIO times as far as the CPU does (measured: 0.4–1.3×), plus GPU_LOGPROB_TOLERANCE.
 */
export const QUANT_RATIO = 1.5;

/** The fixture architectures the GPU engine is compared on, against the CPU engine (Node and the browsers). */
export const GPU_ARCHITECTURES = [
  'qwen2-hello', // dense attention
  'llama3-hello',
  'gemma3-hello', // sliding-window attention
  'mamba-hello', // recurrent
  'qwen35-hello', // hybrid: attention and gated delta net
  'qwen2-hello-256', // f32, the quantized ones' source
] as const;

/** The quantization types the GPU engine is compared on (fixtures qwen2-hello-256-<type>, made from qwen2-hello-256). */
export const GPU_QUANTS = [
  'q8_0',
  'q4_0',
  'q4_k_m',
  'q5_k_m',
  'q6_k',
  'q5_0',
  'q5_1',
  'iq4_nl',
  'iq4_xs',
  'iq3_s',
] as const;

/** LOGPROB_TOLERANCE's twin on the GPU engine (cached against cold, a state written on the CPU against cold): in f16,
 * how tokens are split into batches moves the results more — measured up to 3.6e-3 (gemma3-hello, Firefox over
 * lavapipe). Still below PROMPT_EFFECT, so a wrong state still shows. */
export const GPU_BATCH_TOLERANCE = 8e-3;

/** Images and audio on the GPU engine, against the CPU engine or cached against cold: a media chunk's embeddings are
 * read by the model's layers in f16 there. Measured on the test projectors (Node, Dawn over lavapipe): 0.0042 for an
 * image (gemma3-vision), 0.081 for an audio clip (qwen2a-audio; 0.045 cached against cold in Firefox). Another image or
 * clip in their place moves the same log-probabilities by 1.9 and 3.3: a wrong media state still shows. */
export const GPU_MEDIA_TOLERANCE = 0.15;

/** A different prompt moves the test models' log-probabilities by more than this (seen: 0.025 on mamba-hello, the
 * least sensitive, for a longer last question, 0.0098–0.011 for a short one; 0.05–5 on the others). A test shows its
 * models clear it, or its comparisons could not fail. */
export const PROMPT_EFFECT = 5 * LOGPROB_TOLERANCE;

export interface AnswerDiff {
  /** The tokens each answer chose. */
  tokens: [string[], string[]];
  /** The largest difference of a log-probability, over the steps both took and the top tokens both list. */
  logprobs: number;
}

export function answerDiff(a: ChatCompletion, b: ChatCompletion): AnswerDiff {
  const steps = (r: ChatCompletion) => {
    const content = r.choices[0]?.logprobs?.content;
    if (!content) throw new Error('the answer has no logprobs: ask with COMPARABLE');
    return content;
  };
  const [sa, sb] = [steps(a), steps(b)];
  let logprobs = 0;
  for (const [i, step] of sa.entries()) {
    const other = sb[i];
    if (!other) break;
    const listed = new Map(other.top_logprobs.map((t) => [key(t), t.logprob]));
    for (const t of step.top_logprobs) {
      const l = listed.get(key(t));
      if (l !== undefined) logprobs = Math.max(logprobs, Math.abs(l - t.logprob));
    }
  }
  return { tokens: [sa.map(key), sb.map(key)], logprobs };
}

/** A token by its text and bytes: tokens holding part of a character all read "\uFFFD", their bytes differ. */
function key(t: TopLogprob): string {
  return `${t.token} [${t.bytes?.join(' ') ?? ''}]`;
}
