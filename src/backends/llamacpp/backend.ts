// Hearth's llama.cpp engine, in its worker (or the shared engine another tab runs), as a backend of the router: it
// takes every load option and request (supports.ts EVERYTHING).
import type { Backend, BackendCalls } from '../../contract.ts';
import { EVERYTHING } from '../supports.ts';

/** `kind`: 'webgpu' for the engine in its GPU build (worker/client.ts started it with a usable adapter). */
export function llamacppBackend(engine: BackendCalls, kind: 'wasm' | 'webgpu' = 'wasm'): Backend {
  return {
    kind,
    supports: EVERYTHING,
    load: (r, c) => engine.load(r, c),
    complete: (r, c) => engine.complete(r, c),
    embed: (r, c) => engine.embed(r, c),
    rank: (r, c) => engine.rank(r, c),
    countTokens: (r, c) => engine.countTokens(r, c),
    info: () => engine.info(),
    unload: () => engine.unload(),
  };
}
