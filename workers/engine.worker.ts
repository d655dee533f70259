// The engine's Web Worker: llama.cpp (wasm) and the Engine run here, exposed to the page over Comlink.
// Built as a classic script (scripts/build-worker.mjs) into public/hearth/engine.worker.js.
import * as Comlink from 'comlink';
import { Engine } from '../src/engine/engine.ts';
import { EngineHost } from '../src/engine/host.ts';
import { browserModuleLoader } from './load-module.ts';

Comlink.expose(new EngineHost((opts) => new Engine({ loader: browserModuleLoader(opts), maxModelBytes: opts.maxModelBytes, cache: opts.cache })));
