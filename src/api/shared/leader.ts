// The tab that runs a shared engine: it answers its own calls and those other tabs send over the channel, each on
// the model its tab loaded (gate.ts).
import type { CallControl, EngineCalls } from '../../contract.ts';
import { HearthError } from '../../errors.ts';
import { type Method, RpcServer } from '../../core/rpc/rpc.ts';
import { ModelGate } from './gate.ts';
import type { Addressed, Message, TabModel } from './wire.ts';

// How often, while other tabs' calls run, the leader checks that those tabs still exist: one that closed without a
// word (a crash) would otherwise hold its batch slot, and its model, forever, since it never acknowledges chunks.
const SWEEP_MS = 3_000;

const USES_MODEL: ReadonlySet<Method> = new Set<Method>(['complete', 'embed', 'rank', 'countTokens', 'cacheExport']);

export class Leader {
  private readonly gate = new ModelGate();
  /** What each tab last loaded, to know when no tab needs the loaded model any more. */
  private readonly models = new Map<string, string>();
  /** Each open tab's calls (rpc/rpc.ts), answered over the channel. */
  private readonly servers = new Map<string, RpcServer>();
  private sweeper: ReturnType<typeof setInterval> | undefined;

  constructor(
    readonly term: string,
    private readonly engine: EngineCalls,
    private readonly post: (message: Message) => void,
    /** The tabs that are still open. */
    private readonly openTabs: () => Promise<Set<string>>,
  ) {}

  /** Runs one call of a tab (this one or another) on the engine. */
  async run(
    tab: string,
    method: Method,
    argument: unknown,
    model: TabModel | null,
    control: CallControl,
  ): Promise<unknown> {
    const calls = this.engine as unknown as Record<Method, (a: unknown, c: CallControl) => Promise<unknown>>;
    if (method === 'unload') {
      this.models.delete(tab);
      const loaded = this.gate.loaded;
      if (![...this.models.values()].includes(loaded ?? '')) await this.gate.unload(() => this.engine.unload());
      return undefined;
    }
    if (method !== 'load' && !USES_MODEL.has(method)) return calls[method](argument, control);
    if (model) this.models.set(tab, model.key);
    const info = await this.gate.enter(model, (request, c) => this.engine.load(request, c), control);
    try {
      return method === 'load' ? info : await calls[method](argument, control);
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
      case 'ack':
        if (message.term === this.term) this.servers.get(message.tab)?.receive(message);
        break;
      case 'bye':
        this.left(message.tab);
        break;
    }
  }

  stop(): void {
    clearInterval(this.sweeper);
    for (const server of this.servers.values()) server.abortAll();
  }

  /** Serves a call from a tab that is open (holds its tab lock; anything else on the channel is not a tab). */
  private async accept(call: Addressed & { kind: 'call' }) {
    const open = await this.openTabs().catch(() => null);
    if (!open?.has(call.tab)) return;
    let server = this.servers.get(call.tab);
    if (!server) {
      const { tab } = call;
      server = new RpcServer(
        (m) => this.post({ ...m, term: this.term, tab }),
        (c, control) => this.run(tab, c.method, c.argument, (c as Addressed).model ?? null, control),
      );
      this.servers.set(tab, server);
    }
    server.receive(call);
    this.sweeper ??= setInterval(() => void this.sweep(), SWEEP_MS);
  }

  /** A tab has gone: its calls stop and its model is no longer needed. */
  private left(tab: string) {
    this.models.delete(tab);
    this.servers.get(tab)?.abortAll();
    this.servers.delete(tab);
  }

  private async sweep() {
    if (![...this.servers.values()].some((s) => s.size > 0)) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
      return;
    }
    const open = await this.openTabs().catch(() => null);
    if (!open) return;
    for (const tab of [...this.servers.keys()]) if (!open.has(tab)) this.left(tab);
  }
}
