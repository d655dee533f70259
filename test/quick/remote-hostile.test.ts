// The remote backend against a broken or hostile server (simulated with node:http: no real server misbehaves on
// demand): every case ends in a typed error, soon, and nothing it sends becomes a crash, a hang or an unbounded buffer.
// The real server (llama-server) is e2e/remote.spec.ts's.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineApi } from '../../src/api/engine-api.ts';
import { BackendRouter } from '../../src/api/router.ts';
import { engineCalls, NO_SERVICES } from '../../src/api/services.ts';
import { ServerBackend } from '../../src/backends/server/server.ts';
import { checkRemote } from '../../src/backends/server/remote-options.ts';

/** What each path of the simulated server streams after its headers. */
const ROUTES: Record<string, (res: ServerResponse) => void> = {
  // An endless event: no blank line, ever.
  '/huge': (res) => {
    const piece = `data: ${'x'.repeat(1 << 20)}`;
    let sent = 0;
    const more = () => {
      while (sent++ < 64 && res.write(piece));
      if (sent < 64) res.once('drain', more);
    };
    more();
  },
  '/not-json': (res) => res.end('data: <html>\n\n'),
  '/null': (res) => res.end('data: null\n\n'),
  '/tool-index': (res) =>
    res.end(
      `data: ${JSON.stringify({ choices: [{ delta: { tool_calls: [{ index: 1e9, id: 'a', function: { name: 'f', arguments: '{}' } }] } }] })}\n\n`,
    ),
  '/finish-constructor': (res) =>
    res.end(
      [
        `data: ${JSON.stringify({ choices: [{ delta: { content: 'Hi' }, finish_reason: null }] })}`,
        `data: ${JSON.stringify({ choices: [{ delta: {}, finish_reason: 'constructor' }] })}`,
        `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 'many', completion_tokens: 1 } })}`,
        'data: [DONE]',
        '',
        '',
      ].join('\n\n'),
    ),
  // Finish and usage, then the connection stays open without [DONE].
  '/no-done': (res) =>
    res.write(
      [
        `data: ${JSON.stringify({ choices: [{ delta: { content: 'Hi' }, finish_reason: 'stop' }] })}`,
        `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } })}`,
        '',
        '',
      ].join('\n\n'),
    ),
  // Headers, then silence.
  '/silent': () => {},
  // Embeddings: two vectors both claiming index 0.
  '/dup-index': (res) =>
    res.end(
      JSON.stringify({
        data: [
          { index: 0, embedding: [1, 0] },
          { index: 0, embedding: [0, 1] },
        ],
      }),
    ),
  '/error-event': (res) =>
    res.end(`data: ${JSON.stringify({ error: { message: 'overloaded', type: 'server_error' } })}\n\n`),
};

let server: Server;
let base = '';

beforeAll(async () => {
  server = createServer((req, res) => {
    const [, route, rest] = /^(\/[^/]+)(\/.*)$/.exec(req.url ?? '') ?? [];
    if (rest === '/models') {
      return void res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ data: 'not a list' }));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    ROUTES[route!]?.(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

async function engine(route: string, idleMs = 60_000) {
  const backend = new ServerBackend({ baseURL: `${base}${route}`, model: 'm' }, false, idleMs);
  const router = new BackendRouter([backend], { requested: 'remote', reason: '', adapter: null, selfTest: null });
  const api = new EngineApi({ calls: engineCalls(router, NO_SERVICES), terminate: () => {} });
  await api.load('m');
  return api;
}

const ask = async (route: string, idleMs?: number) => {
  const api = await engine(route, idleMs);
  return api.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }] }).then(
    (r) => r,
    (e) => e,
  );
};

describe('a broken or hostile server (simulated)', () => {
  it('an event that never ends is cut at 8 MiB with remote_bad_response', async () => {
    expect(await ask('/huge')).toMatchObject({ name: 'EngineError', code: 'remote_bad_response' });
  });

  it('chunks that are not JSON objects, or name a tool call at index 1e9, are remote_bad_response', async () => {
    for (const route of ['/not-json', '/null', '/tool-index']) {
      expect(await ask(route), route).toMatchObject({ name: 'EngineError', code: 'remote_bad_response' });
    }
  });

  it('an unknown finish_reason is "stop" and counts that are not numbers are left out; a model list that is not a list is ignored', async () => {
    const r = await ask('/finish-constructor');
    expect(r.choices[0].finish_reason).toBe('stop');
    expect(r.choices[0].message.content).toBe('Hi');
    expect(r.usage).toMatchObject({ prompt_tokens: 0, completion_tokens: 1 });
  });

  it('a stream that ends with its usage but never says [DONE] nor closes is not waited for', async () => {
    const r = await ask('/no-done', 60_000);
    expect(r.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 1 });
  });

  it('a server that sends nothing fails with remote_timeout, retryable', async () => {
    expect(await ask('/silent', 300)).toMatchObject({
      name: 'EngineError',
      code: 'remote_timeout',
      details: { retryable: true },
    });
  });

  it("an error event mid-stream is the server's error, typed", async () => {
    expect(await ask('/error-event')).toMatchObject({ name: 'EngineError', code: 'remote_error' });
  });

  it('embeddings whose indices collide are remote_bad_response', async () => {
    const api = await engine('/dup-index');
    expect(await api.embeddings.create({ input: ['a', 'b'] }).catch((e) => e)).toMatchObject({
      name: 'EngineError',
      code: 'remote_bad_response',
    });
  });

  it('options fetch could not send are refused when the engine is created, naming them', () => {
    expect(() => checkRemote({ baseURL: 'http://u:p@host/v1', model: 'm' }, 'backend')).toThrow(/credentials/);
    expect(() => checkRemote({ baseURL: 'http://host/v1', model: 'm', apiKey: 'ke\ny' }, 'backend')).toThrow(
      /backend\.remote\.apiKey or \.headers: not a valid HTTP header/,
    );
    expect(() => checkRemote({ baseURL: 'http://host/v1', model: 'm', headers: { 'a b': 'c' } }, 'fallback')).toThrow(
      /fallback\.remote\.headers/,
    );
  });
});
