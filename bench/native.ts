// Native llama.cpp (node-llama-cpp 3.22.1, CPU, its prebuilt linux-x64 binary) on the same model and prompt text,
// timed like the browser engines: from the call to the first generated token, then to the last.
import { getLlama, type Llama, type LlamaContext, type LlamaModel } from 'node-llama-cpp';
import type { RunResult } from './page.ts';

export class NativeRunner {
  private constructor(private llama: Llama, private model: LlamaModel, private context: LlamaContext) {}

  static async load(path: string, threads: number, nCtx: number): Promise<NativeRunner> {
    // maxThreads 0: `threads` is then exactly the number used, not a hint.
    const llama = await getLlama({ gpu: false, build: 'never', maxThreads: 0, logLevel: 'error' as never });
    const model = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
    const context = await model.createContext({ contextSize: nCtx, batchSize: 512, threads, sequences: 1 });
    return new NativeRunner(llama, model, context);
  }

  async run(prompt: string, maxTokens: number): Promise<RunResult> {
    const tokens = this.model.tokenize(prompt, true);
    const sequence = this.context.getSequence();
    try {
      const t0 = performance.now();
      let tFirst = 0;
      let tLast = 0;
      let n = 0;
      for await (const _ of sequence.evaluate(tokens, { temperature: 0 })) {
        if (!tFirst) tFirst = performance.now();
        tLast = performance.now();
        if (++n >= maxTokens) break;
      }
      return { promptTokens: tokens.length, genTokens: n, ttftMs: tFirst - t0, decodeMs: tLast - tFirst };
    } finally {
      sequence.dispose();
    }
  }

  get version(): string {
    return this.llama.llamaCppRelease.release;
  }

  async dispose() {
    await this.context.dispose();
    await this.model.dispose();
    await this.llama.dispose();
  }
}
