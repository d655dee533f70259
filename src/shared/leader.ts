// The tab that runs a shared engine: it answers its own calls and those other tabs send over the channel, each on
// the model its tab loaded (gate.ts).
import type { CallControl, EngineCore } from '../contract.ts';
import { HearthError, toWire } from '../errors.ts';
import type { Method } from '../worker/protocol.ts';
import { ModelGate } from './gate.ts';
import type { Message, TabModel } from './wire.ts';

// How often, while other tabs' calls run, the leader checks that those tabs still exist: one that closed without a
// word (a crash) would otherwise hold its batch slot, and its model, forever, since it never acknowledges chunks.
const SWEEP_MS = 3_000;

const USES_MODEL: ReadonlySet<Method> = new Set<Method>(['complete', 'embed', 'rank']);

export class Leader {
  private readonly gate = new ModelGate();
  /** What each tab last loaded, to know when no tab needs the loaded model any more. */
  private readonly models = new Map<string, string>();
  private readonly calls = new Map<string, { tab: string; controller: AbortController; acks: Array<() => void> }>();
  private sweeper: ReturnType<typeof setInterval> | undefined;

  constructor(
    readonly term: string,
    private readonly core: EngineCore,
    private readonly post: (message: Message) => void,
    /** The tabs that are still open. */
    private readonly openTabs: () => Promise<Set<string>>,
  ) {}

  /** Runs one call of a tab (this one or another) on the engine. */
  async run(tab: string, method: Method, argument: unknown, model: TabModel | null, control: CallControl): Promise<unknown> {
    const core = this.core as unknown as Record<Method, (a: unknown, c: CallControl) => Promise<unknown>>;
    if (method === 'unload') {
      this.models.delete(tab);
      const loaded = this.gate.loaded;
      if (![...this.models.values()].includes(loaded ?? '')) await this.gate.unload(() => this.core.unload());
      return undefined;
    }
    if (method !== 'load' && !USES_MODEL.has(method)) return core[method](argument, control);
    if (model) this.models.set(tab, model.key);
    const info = await this.gate.enter(model, (request, c) => this.core.load(request, c), control);
    try {
      return method === 'load' ? info : await core[method](argument, control);
    } catch (err) {
      if (err instanceof HearthError && err.code === 'no_model') this.gate.forget();
      throw err;
    } finally {
      this.gate.leave();
    }
  }

  /** A message from another tab (its shape already checked: wire.ts). */
  receive(message: Message): void {
    switch (message.kind) {
      case 'hello':
        this.post({ kind: 'leader', term: this.term, ready: true });
        break;
      case 'call':
        if (message.term === this.term) void this.accept(message);
        break;
      case 'abort':
        if (message.term === this.term) this.calls.get(`${message.tab}:${message.id}`)?.controller.abort();
        break;
      case 'ack':
        if (message.term === this.term) this.calls.get(`${message.tab}:${message.id}`)?.acks.shift()?.();
        break;
      case 'bye':
        this.left(message.tab);
        break;
    }
  }

  stop(): void {
    clearInterval(this.sweeper);
    for (const call of this.calls.values()) call.controller.abort();
  }

  /** Serves a call from a tab that is open (holds its tab lock; anything else on the channel is not a tab). */
  private async accept(call: Message & { kind: 'call' }) {
    const open = await this.openTabs().catch(() => null);
    if (!open?.has(call.tab) || this.calls.has(`${call.tab}:${call.id}`)) return;
    this.post({ kind: 'accepted', term: this.term, tab: call.tab, id: call.id });
    await this.serve(call);
  }

  private async serve({ tab, id, method, argument, model, progress, chunks }: Message & { kind: 'call' }) {
    const key = `${tab}:${id}`;
    const call = { tab, controller: new AbortController(), acks: [] as Array<() => void> };
    // A stopped call's decode may be waiting for an acknowledgement that will not come.
    call.controller.signal.addEventListener('abort', () => call.acks.splice(0).forEach((ack) => ack()));
    this.calls.set(key, call);
    this.sweeper ??= setInterval(() => void this.sweep(), SWEEP_MS);
    const control: CallControl = {
      signal: call.controller.signal,
      onProgress: progress ? (value) => this.post({ kind: 'progress', term: this.term, tab, id, value }) : undefined,
      onChunk: chunks ? (value) => {
        if (call.controller.signal.aborted) return;
        this.post({ kind: 'chunk', term: this.term, tab, id, value });
        return new Promise<void>((resolve) => call.acks.push(resolve));
      } : undefined,
    };
    let result;
    try {
      result = { ok: true as const, value: await this.run(tab, method, argument, model, control) };
    } catch (err) {
      result = { ok: false as const, error: toWire(err) };
    }
    this.calls.delete(key);
    if (this.calls.size === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
    this.post({ kind: 'result', term: this.term, tab, id, result });
  }

  /** A tab has gone: its calls stop and its model is no longer needed. */
  private left(tab: string) {
    this.models.delete(tab);
    for (const call of this.calls.values()) if (call.tab === tab) call.controller.abort();
  }

  private async sweep() {
    const open = await this.openTabs().catch(() => null);
    if (!open) return;
    for (const call of [...this.calls.values()]) if (!open.has(call.tab)) this.left(call.tab);
  }
}
