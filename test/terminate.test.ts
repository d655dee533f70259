// Ending an engine in Node, and a module that trapped: a threaded build's pthread workers share its heap, so while they
// live the heap cannot be freed (an 8B model's engine kept 4.5 GiB after unload and every reference dropped). What a
// user notices is the process's threads and memory; the threads are what is counted here (Linux: /proc/self/task).
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createNodeEngine, type NodeEngine } from '../src/node.ts';
import { collect, hello, modelPath, NO_CACHE } from './helpers.ts';

const threadsNow = () => readdirSync('/proc/self/task').length;

/** The process's thread count once it has settled at `want` or below (a worker ends asynchronously), else its last. */
async function threadsSettled(want: number): Promise<number> {
  for (let i = 0; i < 100 && threadsNow() > want; i++) await new Promise((r) => setTimeout(r, 100));
  return threadsNow();
}

const threaded = async (): Promise<NodeEngine> => {
  const engine = await createNodeEngine({ variant: 'mt', threads: 2, cache: NO_CACHE });
  await engine.load({ path: modelPath('qwen2-tiny') }, { nCtx: 1024 });
  return engine;
};

const ask = (engine: NodeEngine) =>
  engine.chat.completions.create({ messages: hello, temperature: 0, max_tokens: 8 }).then((r) => r.choices[0]!);

describe.runIf(process.platform === 'linux')('a threaded engine ended', () => {
  it('terminate(): its threads end, a stream in flight and every later call answer EngineError terminated', async () => {
    const before = threadsNow();
    const engine = await threaded();
    expect(threadsNow()).toBeGreaterThan(before);
    const stream = await engine.chat.completions.create({ messages: hello, max_tokens: 400, stream: true });
    let received = 0;
    const reading = (async () => {
      for await (const c of stream) if (c.choices[0]?.delta.content && ++received === 3) engine.terminate();
    })();
    await expect(reading).rejects.toMatchObject({ name: 'EngineError', code: 'terminated' });
    expect(received).toBe(3);
    await expect(ask(engine)).rejects.toMatchObject({ name: 'EngineError', code: 'terminated' });
    await expect(engine.info()).rejects.toMatchObject({ code: 'terminated' });
    await expect(engine.load({ path: modelPath('qwen2-tiny') })).rejects.toMatchObject({ code: 'terminated' });
    expect(await threadsSettled(before)).toBe(before);
  });

  it("a module that trapped (simulated at the call boundary) is replaced by a fresh one, and the old one's threads end", async () => {
    const engine = await threaded();
    const reference = await ask(engine);
    const withOne = threadsNow();
    const { llama } = engine.engine.requireSession();
    const trapped = (() => {
      try {
        llama.guard(() => {
          throw new WebAssembly.RuntimeError('unreachable (simulated trap)');
        });
      } catch (err) {
        return err;
      }
    })();
    expect(trapped).toMatchObject({ name: 'EngineError', code: 'wasm_crash' });
    // The next request loads the model again into a fresh module and answers as before.
    expect((await ask(engine)).message).toEqual(reference.message);
    expect(await threadsSettled(withOne)).toBe(withOne);
    engine.terminate();
  });
});

describe('a single-thread engine ended', () => {
  it('terminate(): later calls answer terminated; a new engine in the same process answers as before', async () => {
    const engine = await createNodeEngine({ cache: NO_CACHE });
    await engine.load({ path: modelPath('qwen2-tiny') }, { nCtx: 1024 });
    const reference = await ask(engine);
    engine.terminate();
    const streamed = (async () => collect(await engine.chat.completions.create({ messages: hello, stream: true })))();
    await expect(streamed).rejects.toMatchObject({ code: 'terminated' });
    const again = await createNodeEngine({ cache: NO_CACHE });
    await again.load({ path: modelPath('qwen2-tiny') }, { nCtx: 1024 });
    expect((await ask(again)).message).toEqual(reference.message);
    again.terminate();
  });
});
