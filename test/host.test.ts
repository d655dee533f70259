// The page <-> worker protocol in Node, over the real wasm and a real MessageChannel: the worker side (WorkerHost)
// and the page's RPC client. Typed errors arrive as themselves, an abort stops the call, chunks are acknowledged by
// the page under the one flow-control rule (rpc/flow.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveRequest } from '../src/core/chat/request.ts';
import { LlamaEngine } from '../src/backends/llamacpp/llama-engine.ts';
import { AbortError, ModelLoadError } from '../src/errors.ts';
import { nodeModuleLoader, openPath } from '../src/node.ts';
import type { ChatCompletionChunk } from '../src/types.ts';
import { assetsIn } from '../src/core/assets.ts';
import { WorkerHost, serveStart } from '../src/backends/llamacpp/worker/host.ts';
import { WorkerClient } from '../src/backends/llamacpp/worker/client.ts';
import { WINDOW } from '../src/core/rpc/flow.ts';
import { RpcClient, type RpcMessage } from '../src/core/rpc/rpc.ts';
import { modelPath } from './helpers.ts';

let rpc: RpcClient;
const { onProgress: _, ...request } = resolveRequest({ messages: [{ role: 'user', content: 'Hi' }] });

beforeAll(async () => {
  const { port1, port2 } = new MessageChannel();
  rpc = new RpcClient((m) => port1.postMessage(m));
  port1.onmessage = (e: MessageEvent<RpcMessage>) => rpc.receive(e.data);
  const host = new WorkerHost(() => new LlamaEngine({ loader: nodeModuleLoader(), openPath }));
  const init = await host.init(
    { variant: 'st', buildReason: 'a test', threads: 1, assets: assetsIn('file:///unused/') },
    port2 as never,
  );
  expect(init.ok).toBe(true);
});
afterAll(() => rpc.call('unload', undefined));

describe("the engine worker's calls", () => {
  it('come back as the same typed error the engine threw', async () => {
    const err = (await rpc
      .call('load', { source: { path: '/nonexistent/model.gguf' }, options: {} })
      .catch((e: unknown) => e)) as ModelLoadError;
    expect(err).toBeInstanceOf(ModelLoadError);
    expect(err.code).toBe('not_found');
  });

  it('stream chunks to a slow page no more than the window ahead of its acknowledgements', async () => {
    await rpc.call('load', { source: { path: modelPath('qwen2-hello') }, options: {} });
    const got: ChatCompletionChunk[] = [];
    let pendingAcks = 0;
    let maxPending = 0;
    await rpc.call('complete', request, {
      onChunk: async (c) => {
        got.push(c);
        pendingAcks++;
        maxPending = Math.max(maxPending, pendingAcks);
        await new Promise((res) => setTimeout(res, 5)); // a slow page
        pendingAcks--;
      },
    });
    expect(got.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Hello, world!');
    expect(maxPending).toBeLessThanOrEqual(WINDOW);
  });

  it('a page that stops reading stops the decoding within the window', async () => {
    await rpc.call('load', { source: { path: modelPath('qwen2-tiny') }, options: {} });
    let chunks = 0;
    const controller = new AbortController();
    const stalled = rpc.call(
      'complete',
      { ...request, maxTokens: 500 },
      {
        signal: controller.signal,
        onChunk: () => (++chunks === 1 ? new Promise<void>(() => {}) : undefined), // never takes the first in
      },
    );
    await new Promise((res) => setTimeout(res, 1500));
    expect(chunks).toBeGreaterThan(1);
    expect(chunks).toBeLessThanOrEqual(WINDOW + 1);
    controller.abort();
    expect(await stalled.catch((e) => e)).toBeInstanceOf(AbortError);
  });

  it('an abort stops the call', async () => {
    let chunks = 0;
    const controller = new AbortController();
    const err = await rpc
      .call(
        'complete',
        { ...request, maxTokens: 500 },
        {
          signal: controller.signal,
          onChunk: () => void (++chunks === 3 && controller.abort()),
        },
      )
      .catch((e) => e);
    expect(err).toBeInstanceOf(AbortError);
    expect(chunks).toBeLessThan(6);
    // The engine is free again: the next call is answered.
    const after: string[] = [];
    await rpc.call(
      'complete',
      { ...request, maxTokens: 3 },
      { onChunk: (c) => void after.push(c.choices[0]?.delta.content ?? '') },
    );
    expect(after.length).toBeGreaterThan(0);
  });
});

describe("the page's start of the worker", () => {
  it('is one message handing over the port every call then goes over, answered with what the engine is', async () => {
    // A MessageChannel stands in for the Worker: one end the page's `worker`, the other the worker's global scope.
    const { port1: page, port2: scope } = new MessageChannel();
    scope.start();
    const host = new WorkerHost(() => new LlamaEngine({ loader: nodeModuleLoader(), openPath }));
    serveStart(scope, host);
    const worker = new WorkerClient(Object.assign(page, { terminate: () => page.close() }) as unknown as Worker);
    page.start();
    await worker.start({ variant: 'st', buildReason: 'a test', threads: 1, assets: assetsIn('file:///unused/') });
    expect(worker.started).toMatchObject({ build: 'st', model: null });
    // Posted to the worker after its start, a second start is not the page's: ignored.
    page.postMessage({ kind: 'start', init: {}, calls: null });
    await worker.calls.load({ source: { path: modelPath('qwen2-hello') }, options: {} }, {});
    const text: string[] = [];
    await worker.calls.complete(request, { onChunk: (c) => void text.push(c.choices[0]?.delta.content ?? '') });
    expect(text.join('')).toBe('Hello, world!');
    await worker.calls.unload();
    worker.terminate();
  });
});
