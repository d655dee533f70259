// The worker side of the page <-> worker protocol, in Node over the real wasm: results and typed errors as data,
// aborts by request id, chunks acknowledged by the page.
import { beforeAll, describe, expect, it } from 'vitest';
import { resolveRequest } from '../src/api/request.ts';
import { Engine } from '../src/engine/engine.ts';
import { fromWire, ModelLoadError } from '../src/errors.ts';
import { nodeModuleLoader, openPath } from '../src/node.ts';
import type { ChatCompletionChunk } from '../src/types.ts';
import { EngineHost } from '../src/worker/host.ts';
import { modelPath } from './helpers.ts';

let host: EngineHost;
const { onProgress: _, ...request } = resolveRequest({ messages: [{ role: 'user', content: 'Hi' }] });

beforeAll(async () => {
  host = new EngineHost(() => new Engine({ loader: nodeModuleLoader(), openPath }));
  const init = await host.init({ variant: 'st', threads: 1, assetsUrl: 'file:///unused/' });
  expect(init.ok).toBe(true);
});

describe('EngineHost', () => {
  it('returns errors as data that become the same typed error on the page', async () => {
    const r = await host.call(1, 'load', { source: { path: '/nonexistent/model.gguf' }, options: {} });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const err = fromWire(JSON.parse(JSON.stringify(r.error))); // as it crosses postMessage
    expect(err).toBeInstanceOf(ModelLoadError);
    expect(err.code).toBe('not_found');
  });

  it('streams chunks to the page and waits for its acknowledgements', async () => {
    expect((await host.call(2, 'load', { source: { path: modelPath('qwen2-hello') }, options: {} })).ok).toBe(true);
    const got: ChatCompletionChunk[] = [];
    let pendingAcks = 0;
    let maxPending = 0;
    const r = await host.call(3, 'complete', request, undefined, async (c) => {
      got.push(c);
      pendingAcks++;
      maxPending = Math.max(maxPending, pendingAcks);
      await new Promise((res) => setTimeout(res, 5)); // a slow page
      pendingAcks--;
    });
    expect(r.ok).toBe(true);
    expect(got.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Hello, world!');
    expect(maxPending).toBeLessThanOrEqual(8);
  });

  it('aborts a request by id', async () => {
    expect((await host.call(4, 'load', { source: { path: modelPath('qwen2-tiny') }, options: {} })).ok).toBe(true);
    let chunks = 0;
    const done = host.call(5, 'complete', { ...request, maxTokens: 500 }, undefined, async () => {
      if (++chunks === 3) host.abort(5);
    });
    const r = await done;
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatchObject({ name: 'AbortError', code: 'aborted' });
    expect(chunks).toBeLessThan(6);
  });
});
