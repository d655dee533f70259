// The engine's Web Worker: llama.cpp (wasm) and the Engine run here. The page starts it over Comlink (init) and calls it
// over the MessagePort it hands over then (src/rpc/rpc.ts).
// Built as a classic script (scripts/build-worker.mjs) into public/hearth/engine.worker.js.
import * as Comlink from 'comlink';
import { Engine } from '../src/engine/engine.ts';
import { idbBackend } from '../src/engine/models/idb.ts';
import { opfsBackend } from '../src/engine/models/opfs.ts';
import { ModelStore } from '../src/engine/models/store.ts';
import { EngineHost } from '../src/backends/wasm/host.ts';
import { browserModuleLoader } from '../src/backends/wasm/load-module.ts';

Comlink.expose(new EngineHost((init, onStage) => {
  // OPFS where the browser has sync access handles, else IndexedDB (WebKitGTK has no OPFS).
  const models = opfsBackend() ?? idbBackend();
  return new Engine({
    loader: browserModuleLoader(init, onStage), maxModelBytes: init.maxModelBytes, cache: init.cache,
    hfEndpoint: init.hfEndpoint, models: models && new ModelStore(models),
  });
}));
