// Ending an engine in Node, and a module that trapped: a threaded build's pthread workers share its heap and the main
// thread waits on it for their messages, so the heap outlived the module (an 8B model's engine kept 4.5 GiB after
// unload and every reference dropped). What a user notices is the process's threads and memory: the threads are
// counted (Linux: /proc/self/task), and the module and its heap are watched being collected.
import { readdirSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { createNodeEngine, type NodeEngine } from '../src/node.ts';
import { collect, hello, modelPath, NO_CACHE } from './helpers.ts';

const threadsNow = () => readdirSync('/proc/self/task').length;

/** The process's thread count once it has settled at `want` or below (a worker ends asynchronously), else its last. */
async function threadsSettled(want: number): Promise<number> {
  for (let i = 0; i < 100 && threadsNow() > want; i++) await new Promise((r) => setTimeout(r, 100));
  return threadsNow();
}

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Whether the object is collected once nothing refers to it. Each collection runs in a later task than the last
 * deref(): a WeakRef keeps what it returned alive until the end of that task. */
async function collected(ref: WeakRef<object>): Promise<boolean> {
  for (let i = 0; i < 20; i++) {
    await new Promise((r) => setTimeout(r, 50));
    gc();
    await new Promise((r) => setTimeout(r, 0));
    if (ref.deref() === undefined) return true;
  }
  return false;
}

/** The engine's wasm module and its heap, watched. */
const watch = (engine: NodeEngine) => {
  const { mod } = engine.engine.requireSession().llama;
  return { mod: new WeakRef(mod), heap: new WeakRef(mod.wasmMemory ?? mod.HEAPU8.buffer) };
};

const threaded = async (): Promise<NodeEngine> => {
  const engine = await createNodeEngine({ variant: 'mt', threads: 2, cache: NO_CACHE });
  await engine.load({ path: modelPath('qwen2-tiny') }, { nCtx: 1024 });
  return engine;
};

/** Reads a stream and terminates the engine at its third piece of text; what the reading ended with. (The stream is
 * gone when this returns, as it would be from a page that let go of it.) */
async function terminateMidStream(engine: NodeEngine): Promise<{ error: unknown; received: number }> {
  const stream = await engine.chat.completions.create({ messages: hello, max_tokens: 400, stream: true });
  let received = 0;
  try {
    for await (const c of stream) if (c.choices[0]?.delta.content && ++received === 3) engine.terminate();
  } catch (error) {
    return { error, received };
  }
  return { error: null, received };
}

/** A trap in the engine's module, simulated at the call boundary: what the call threw. */
function trap(engine: NodeEngine): unknown {
  try {
    engine.engine.requireSession().llama.guard(() => {
      throw new WebAssembly.RuntimeError('unreachable (simulated trap)');
    });
  } catch (err) {
    return err;
  }
}

const ask = (engine: NodeEngine) =>
  engine.chat.completions.create({ messages: hello, temperature: 0, max_tokens: 8 }).then((r) => r.choices[0]!);

describe.runIf(process.platform === 'linux')('a threaded engine ended', () => {
  it('terminate(): its threads end, a stream in flight and every later call answer EngineError terminated', async () => {
    const before = threadsNow();
    const engine = await threaded();
    expect(threadsNow()).toBeGreaterThan(before);
    let watched: ReturnType<typeof watch> | null = watch(engine);
    const { error, received } = await terminateMidStream(engine);
    expect(error).toMatchObject({ name: 'EngineError', code: 'terminated' });
    expect(received).toBe(3);
    await expect(ask(engine)).rejects.toMatchObject({ name: 'EngineError', code: 'terminated' });
    await expect(engine.info()).rejects.toMatchObject({ code: 'terminated' });
    await expect(engine.load({ path: modelPath('qwen2-tiny') })).rejects.toMatchObject({ code: 'terminated' });
    expect(await threadsSettled(before)).toBe(before);
    const { mod, heap } = watched;
    watched = null;
    expect(await collected(heap)).toBe(true);
    expect(await collected(mod)).toBe(true);
  });

  it("a module that trapped (simulated at the call boundary) is replaced by a fresh one; the old one's threads end and its heap is freed, though the page keeps the error", async () => {
    const engine = await threaded();
    const reference = await ask(engine);
    const withOne = threadsNow();
    const old = watch(engine);
    const trapped = trap(engine);
    expect(trapped).toMatchObject({ name: 'EngineError', code: 'wasm_crash' });
    // The next request loads the model again into a fresh module and answers as before.
    expect((await ask(engine)).message).toEqual(reference.message);
    expect(await threadsSettled(withOne)).toBe(withOne);
    expect(await collected(old.heap)).toBe(true);
    expect(trapped).toMatchObject({ message: expect.stringContaining('fatal error') }); // still held
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
