// The engine's Web Worker: llama.cpp (wasm) and the LlamaEngine run here. The page starts it with one message and calls it
// over the MessagePort it hands over then (src/backends/llamacpp/worker/protocol.ts). Built as a classic script
// (scripts/build-worker.mjs) into public/hearth/engine.worker.js.
import { LlamaEngine } from '../src/backends/llamacpp/llama-engine.ts';
import { idbBackend } from '../src/core/models/idb.ts';
import { opfsBackend } from '../src/core/models/opfs.ts';
import { ModelStore } from '../src/core/models/store.ts';
import { WorkerHost, serveStart } from '../src/backends/llamacpp/worker/host.ts';
import { browserModuleLoader } from '../src/backends/llamacpp/worker/load-module.ts';

serveStart(
  self,
  new WorkerHost((init, onStage) => {
    // OPFS where the browser has sync access handles, else IndexedDB (WebKitGTK has no OPFS).
    const models = opfsBackend() ?? idbBackend();
    return new LlamaEngine({
      loader: browserModuleLoader(init, onStage),
      maxModelBytes: init.maxModelBytes,
      cache: init.cache,
      hfEndpoint: init.hfEndpoint,
      gpuFallback: init.gpuFallback,
      shaderF16: init.shaderF16,
      subgroupMatrix: init.subgroupMatrix,
      models: models && new ModelStore(models),
    });
  }),
);
