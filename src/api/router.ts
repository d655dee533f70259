// The backend calls the page's API sits on: a router over the backends this engine may use, in order of preference
// (api/select.ts decides the order: WebGPU first when it qualified, then wasm). A load goes to the first backend that
// supports its options and fits the model, the others stepping aside with the reason in engine.info().selection;
// every later call goes to the backend holding the model, once checked against what that backend supports
// (backends/supports.ts). A fallback backend (a server, EngineOptions.fallback) takes only the loads the others
// failed because the model cannot run on this device. The KV cache and the model store are services beside it
// (contract.ts), not backends: whichever backend runs the model, they stay where they are.
import type { Backend, BackendCalls, CallControl, CompletionRequest, LoadRequest } from '../contract.ts';
import type { BackendSelection, EngineInfo, ModelInfo, ModelStorage } from '../types.ts';
import { ModelLoadError, type ModelLoadErrorCode } from '../errors.ts';
import { checkCall, checkCompletion, checkLoad, loadRefusal } from '../backends/supports.ts';
import { checkLoadOptions } from '../core/options.ts';

/** Load failures that say the model cannot run on this device (not that it is broken): a fallback may take it.
 * 'context_failed' only when it was memory (details.memory: load.ts). */
const CANNOT_RUN_HERE: ReadonlySet<ModelLoadErrorCode> = new Set([
  'too_large',
  'kv_too_large',
  'context_failed',
  'quota_exceeded',
]);

export function cannotRunHere(err: unknown): boolean {
  return (
    err instanceof ModelLoadError &&
    CANNOT_RUN_HERE.has(err.code) &&
    (err.code !== 'context_failed' || err.details.memory === true)
  );
}

export class BackendRouter implements BackendCalls {
  /** The backend holding the loaded model. */
  private holder: Backend | null = null;
  /** Why the backends were ordered as they are (the selection's reason before any load moved a model). */
  private readonly chosen: string;

  /** `storage`: where the model store keeps models (engine.info().storage), whichever backend runs the model. */
  constructor(
    private readonly backends: readonly Backend[],
    private readonly selection: BackendSelection,
    private readonly storage: ModelStorage | null = null,
  ) {
    if (!backends.length) throw new Error('a router needs a backend');
    this.chosen = selection.reason;
  }

  /** Loads run one at a time: each may unload what the one before loaded, and wllama takes one at a time. */
  private loading: Promise<unknown> = Promise.resolve();

  /** Every load passes here (the page's, Node's, another tab's), so its options are checked here, once, the same
   * whichever backend takes them. */
  load(request: LoadRequest, control: CallControl = {}): Promise<ModelInfo> {
    try {
      checkLoadOptions(request?.options);
    } catch (err) {
      return Promise.reject(err);
    }
    const next = this.loading.then(() => this.loadNow(request, control));
    this.loading = next.catch(() => {});
    return next;
  }

  private async loadNow(request: LoadRequest, control: CallControl): Promise<ModelInfo> {
    const passed: string[] = [];
    let load = request;
    const own = this.backends.filter((b) => !b.fallback);
    try {
      for (const [i, backend] of own.entries()) {
        if (i < own.length - 1) {
          let refusal = loadRefusal(backend, load)?.message ?? null;
          if (!refusal && backend.fit) ({ refusal, request: load } = await backend.fit(load, control));
          if (refusal) {
            passed.push(refusal);
            continue;
          }
        } else {
          checkLoad(backend, load);
        }
        return await this.hold(backend, load, control, passed);
      }
    } catch (err) {
      // A model this device cannot run goes to the fallback (a server), when the page configured one.
      const fallback = this.backends.find((b) => b.fallback);
      if (!fallback || !cannotRunHere(err)) throw err;
      return this.hold(fallback, request, control, [...passed, (err as Error).message]);
    }
    throw new Error('unreachable: the last backend takes every load it supports');
  }

  private async hold(backend: Backend, load: LoadRequest, control: CallControl, passed: string[]): Promise<ModelInfo> {
    if (this.holder && this.holder !== backend) await this.holder.unload();
    this.holder = null;
    const info = await backend.load(load, control);
    this.holder = backend;
    const runs =
      backend.kind === 'remote'
        ? 'answers come from the server named in engine.info().remote'
        : `this model runs on ${backend.kind}`;
    this.selection.reason = passed.length ? `${passed.join('; ')}: ${runs}` : this.chosen;
    return info;
  }

  /** The backend holding the model, or before a load the one loads go to first. */
  private get current(): Backend {
    return this.holder ?? this.backends.find((b) => !b.fallback)!;
  }

  complete(request: CompletionRequest, control?: CallControl): Promise<void> {
    const backend = this.current;
    checkCompletion(backend, request);
    return backend.complete(request, control);
  }

  async embed(request: { inputs: string[] }, control?: CallControl) {
    checkCall(this.current, 'embeddings');
    return this.current.embed(request, control);
  }

  async rank(request: { query: string; documents: string[] }, control?: CallControl) {
    checkCall(this.current, 'rerank');
    return this.current.rank(request, control);
  }

  countTokens(request: CompletionRequest | { text: string }, control?: CallControl): Promise<{ tokens: number }> {
    const backend = this.current;
    if ('messages' in request) checkCompletion(backend, request);
    return backend.countTokens(request, control);
  }

  async info(): Promise<EngineInfo> {
    const info = await this.current.info();
    return { ...info, storage: info.storage ?? this.storage, selection: { ...this.selection }, shared: null };
  }

  async unload(): Promise<void> {
    this.holder = null;
    const results = await Promise.allSettled(this.backends.map((b) => b.unload()));
    for (const r of results) if (r.status === 'rejected') throw r.reason;
  }
}
