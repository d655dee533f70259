// Which model a shared engine holds, for the tabs that use it. The engine holds one model; tabs may have loaded
// different ones. A request runs only while its tab's model is the loaded one; a tab that needs another waits until
// the requests on the current one have ended, then loads its own. So no tab is answered by another tab's model, and
// tabs that want the same model load it once.
import { abortable } from '../../core/abort.ts';
import type { CallControl, LoadRequest } from '../../contract.ts';
import { AbortError } from '../../errors.ts';
import type { ModelInfo, Progress } from '../../types.ts';
import type { TabModel } from './wire.ts';

type Load = (request: LoadRequest, control: CallControl) => Promise<ModelInfo>;

export class ModelGate {
  private key: string | null = null;
  private info: ModelInfo | null = null;
  private active = 0;
  private switching: { key: string; done: Promise<ModelInfo>; listeners: Set<(p: Progress) => void> } | null = null;
  private wakers: Array<() => void> = [];

  /** The key of the model loaded now. */
  get loaded(): string | null {
    return this.key;
  }

  /**
   * Waits until `model` is the loaded one (loading it when no request needs another), then counts one request on it
   * until leave(). With no model (the tab loaded none), the request uses whatever is loaded. Tabs waiting for the
   * model another tab is loading see that load's progress.
   */
  async enter(model: TabModel | null, load: Load, control: CallControl): Promise<ModelInfo | null> {
    for (;;) {
      if (control.signal?.aborted) throw new AbortError();
      const switching = this.switching;
      if (switching) {
        if (switching.key === model?.key && control.onProgress) switching.listeners.add(control.onProgress);
        await abortable(
          switching.done.then(
            () => {},
            () => {},
          ),
          control.signal,
        );
        continue;
      }
      if (!model || model.key === this.key) {
        this.active++;
        return this.info;
      }
      if (this.active > 0) {
        await abortable(new Promise<void>((wake) => this.wakers.push(wake)), control.signal);
        continue;
      }
      const listeners = new Set(control.onProgress ? [control.onProgress] : []);
      const done = load(model.request, { signal: control.signal, onProgress: (p) => listeners.forEach((l) => l(p)) });
      this.switching = { key: model.key, done, listeners };
      this.key = null;
      this.info = null;
      try {
        this.info = await done;
        this.key = model.key;
      } finally {
        this.switching = null;
        this.wake();
      }
    }
  }

  leave(): void {
    if (--this.active === 0) this.wake();
  }

  /** Unloads when no request runs (else the model stays until another is needed). */
  async unload(unload: () => Promise<void>): Promise<void> {
    if (this.active > 0 || this.switching || this.key === null) return;
    this.key = null;
    this.info = null;
    await unload();
  }

  /** The engine lost its model (a crash): the next request loads its model again. */
  forget(): void {
    this.key = null;
    this.info = null;
  }

  private wake() {
    const wakers = this.wakers;
    this.wakers = [];
    wakers.forEach((w) => w());
  }
}
