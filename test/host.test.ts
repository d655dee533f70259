// The worker side of the page <-> worker protocol, in Node over the real wasm: results and typed errors as data,
// aborts by request id, chunks acknowledged by the page.
import { beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../src/engine/engine.ts';
import { EngineHost } from '../src/engine/host.ts';
import { nodeModuleLoader } from '../src/engine/llama/node.ts';
import { fromWire, ModelLoadError } from '../src/errors.ts';
import { defaultWasmDir, openPath } from '../src/node.ts';
import type { ChatCompletionChunk } from '../src/types.ts';
import { modelPath } from './helpers.ts';

let host: EngineHost;
const messages = [{ role: 'user' as const, content: 'Hi' }];

beforeAll(async () => {
  host = new EngineHost(() => new Engine({ loader: nodeModuleLoader({ dir: defaultWasmDir }), openPath }));
  const init = await host.init({ variant: 'st', threads: 1, assetsUrl: 'file:///unused/' });
  expect(init.ok).toBe(true);
});

describe('EngineHost', () => {
  it('returns errors as data that become the same typed error on the page', async () => {
    const r = await host.load(1, { path: '/nonexistent/model.gguf' }, {});
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const err = fromWire(JSON.parse(JSON.stringify(r.error))); // as it crosses postMessage
    expect(err).toBeInstanceOf(ModelLoadError);
    expect(err.code).toBe('not_found');
  });

  it('streams chunks to the page and waits for its acknowledgements', async () => {
    expect((await host.load(2, { path: modelPath('qwen2-hello') }, {})).ok).toBe(true);
    const got: ChatCompletionChunk[] = [];
    let pendingAcks = 0;
    let maxPending = 0;
    const r = await host.complete(3, { messages }, async (c) => {
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
    expect((await host.load(4, { path: modelPath('qwen2-tiny') }, {})).ok).toBe(true);
    let chunks = 0;
    const done = host.complete(5, { messages, max_tokens: 500 }, async () => {
      if (++chunks === 3) host.abort(5);
    });
    const r = await done;
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatchObject({ name: 'AbortError', code: 'aborted' });
    expect(chunks).toBeLessThan(6);
  });
});
