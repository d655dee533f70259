// What the benchmark scenarios share: their options, the prompt they time prefill on, a pause between runs, and the
// statistics.

/** What run.ts gives every scenario (from its command line). */
export interface ScenarioOptions {
  json: boolean;
  reps: number;
  threads: number[] | null;
  /** quants: only these quantization types (all when null). */
  types: string[] | null;
  /** profile: which SIMD build ('auto': relaxed where the browser has it). */
  simd: 'auto' | 'plain' | null;
  /** webgpu: run in Node (Dawn for Node's adapter) rather than a browser. */
  node: boolean;
  /** webgpu: this test model rather than the benchmark model's quantizations. */
  model: string | null;
  /** webgpu: count and time the GPU engine's WebGPU calls in one more run. */
  trace: boolean;
  /** webgpu: also the models people put on a GPU (Llama-3.2-1B's and Qwen2.5-3B's shapes, Q4_K_M). */
  large: boolean;
  /** webgpu: also a ~512-token prompt's prefill (Node). */
  long: boolean;
  /** restore: only this engine (both when null): an 8B model's cold read takes hours on lavapipe. */
  engine: 'cpu' | 'gpu' | null;
  /** restore: unload and load in one engine rather than make another (a machine that cannot hold two heaps). */
  sameEngine: boolean;
  /** speculative: the CPU engine in headless Chromium (the build a page gets) rather than in Node. */
  browser: boolean;
  log: (line: string) => void;
}

// About 128 tokens once Qwen2.5's template has wrapped it (the decode scenario prints the count).
export const PROMPT = [
  {
    role: 'user' as const,
    content:
      'The hearth was the centre of the house: it gave warmth in winter, light in the long evenings and a place ' +
      'to cook the bread, the soup and the stew. Families gathered around it to tell stories, to mend clothes and to ' +
      'plan the work of the next day. Describe, in a few calm paragraphs, how such a room might have looked, sounded ' +
      'and smelled on a cold night, and what the people in it might have talked about before going to sleep.',
  },
];

/** About 512 tokens of prompt (with its chat template): where a prompt's matrix products fill a GPU. */
export const LONG_PROMPT = [
  {
    role: 'user' as const,
    content: [1, 2, 3, 4]
      .map((n) => `Part ${n}. ${PROMPT[0]!.content}`)
      .concat('Answer each part in turn, and say which of the four rooms you would rather sit in.')
      .join('\n\n'),
  },
];

/** Lets the previous engine's spinning threads go to sleep before the next run. */
export const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

/** Order of the engines in repetition `rep`: rotated, so no engine always runs first (or right after another). */
export function rotate<T>(items: T[], rep: number): T[] {
  const k = rep % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

// A museum help desk conversation (resume, return): about 1,000 tokens of system prompt, then questions of ~40 tokens.
const TOPICS = ['bread', 'rivers', 'lighthouses', 'tea', 'old maps', 'winter', 'bees', 'clocks', 'gardens', 'trains'];
export const MUSEUM_SYSTEM = `You are the help desk of a small town museum. ${Array.from(
  { length: 36 },
  (_, i) =>
    `Rule ${i + 1}: when visitors ask about ${TOPICS[i % TOPICS.length]}, answer in two short sentences, cite the room ` +
    `where the exhibit stands, and never invent opening hours.`,
).join(' ')}`;
export const museumQuestion = (i: number) =>
  `Question ${i + 1}: I am visiting with my family this weekend. What can we ` +
  `see about ${TOPICS[i % TOPICS.length]}, and which room should we start in if we only have an hour?`;
