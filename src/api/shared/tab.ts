// One engine for the tabs of an origin (EngineOptions.shared). Every tab queues for one Web Lock; the tab holding
// it starts the engine and leads: it runs its own calls directly and the other tabs' calls, which arrive over a
// BroadcastChannel (leader.ts). When the leader closes, the browser hands the lock to the next tab, which starts its
// own engine; calls the old leader had taken fail with a retryable 'leader_gone', calls it had not wait for the new
// one, and the next calls load each tab's model again, from the model store. Not a SharedWorker: the model store
// reads through OPFS sync access handles, which only dedicated workers have, and Chrome for Android has no
// SharedWorker.
//
// Every wait has an end: for a leader to be ready (LEADER_WAIT_MS), for a call to be taken (ACCEPT_MS), and while a
// call runs the leader's term lock is checked (LIVENESS_MS), so a leader that vanished, or one that never was (a
// forged message), cannot leave a tab's requests hanging.
import { abortable } from '../../core/abort.ts';
import type { CallControl, EngineCalls, LoadRequest, CallTarget } from '../../contract.ts';
import { EngineError, terminatedError } from '../../errors.ts';
import { type Method, RpcClient, rpcStubs } from '../../core/rpc/rpc.ts';
import type { EngineInfo } from '../../types.ts';
import { Leader } from './leader.ts';
import { leaderGone, lockNames, type Message, readWire, stamp, type TabModel } from './wire.ts';

/** Longer than an engine start may take (backends/llamacpp/worker/client.ts: 120 s), which is what a new leader does
 * first. */
const LEADER_WAIT_MS = 150_000;
/** A leader takes a call at once (it answers 'accepted' before running it). */
const ACCEPT_MS = 10_000;
/** How often a tab with calls in flight checks that the leader still holds its term. */
const LIVENESS_MS = 2_000;

const leaderTimeout = (what: string) =>
  new EngineError(`the shared engine did not answer: ${what}. Reload the page to start it again.`, 'leader_timeout', {
    retryable: true,
  });

/** Joins (or starts) the engine the tabs of this origin share under `name`. */
export async function joinShared(name: string, start: () => Promise<CallTarget>): Promise<CallTarget> {
  if (typeof BroadcastChannel === 'undefined' || !globalThis.navigator?.locks) {
    console.warn('[hearth] this browser lacks Web Locks or BroadcastChannel: the engine is not shared with other tabs');
    return start();
  }
  const tab = new SharedTab(name, start);
  await tab.join();
  return tab;
}

class SharedTab implements CallTarget {
  readonly calls: EngineCalls;
  private readonly id = crypto.randomUUID();
  private readonly locks: ReturnType<typeof lockNames>;
  private readonly channel: BroadcastChannel;
  /** Aborted when the tab leaves: releases its locks, or takes it out of the queue for the lead. */
  private readonly quit = new AbortController();
  /** The leading tab's term that calls go to; null while no leader is ready. */
  private term: string | null = null;
  private leader: Leader | null = null;
  private local: CallTarget | null = null;
  /** This tab holds the lead (its engine may still be starting). */
  private leading = false;
  private model: TabModel | null = null;
  private loads = 0;
  /** Calls sent to the leader (rpc/rpc.ts), addressed to its term. */
  private readonly rpc = new RpcClient((m) => {
    if (this.term) this.post({ ...m, term: this.term, tab: this.id });
  });
  private waiters: Array<() => void> = [];
  private dead: Error | null = null;
  private liveness: ReturnType<typeof setInterval> | undefined;
  private joined!: { resolve(): void; reject(err: unknown): void };

  constructor(
    private readonly name: string,
    private readonly start: () => Promise<CallTarget>,
  ) {
    this.locks = lockNames(name);
    this.channel = new BroadcastChannel(this.locks.channel);
    this.calls = rpcStubs<EngineCalls>((method, argument, control) => this.call(method, argument, control));
  }

  /** Resolves once a leader (this tab or another) is ready; rejects when this tab should lead and cannot start, or
   * when no leader is ready within LEADER_WAIT_MS. */
  async join(): Promise<void> {
    const joined = new Promise<void>((resolve, reject) => (this.joined = { resolve, reject }));
    // This tab's own lock tells the leader it is open: the browser releases a closed or crashed tab's locks.
    await new Promise<void>((held) => {
      void navigator.locks.request(this.locks.tab(this.id), () => {
        held();
        return aborted(this.quit.signal);
      });
    });
    this.channel.onmessage = (e: MessageEvent<unknown>) => {
      const message = readWire(e.data);
      if (message) this.receive(message);
    };
    addEventListener('pagehide', this.leave);
    navigator.locks.request(this.locks.leader, { signal: this.quit.signal }, () => this.lead()).catch(() => {});
    this.post({ kind: 'hello' });
    const timer = setTimeout(() => {
      if (this.leading) return; // this tab leads: its own start has its own timeout
      const err = leaderTimeout(`no tab had it ready within ${LEADER_WAIT_MS / 1000} s`);
      this.joined.reject(err);
      this.close(err);
    }, LEADER_WAIT_MS);
    return joined.finally(() => clearTimeout(timer));
  }

  terminate(): void {
    this.close(terminatedError());
  }

  /** Leaves the shared engine (stopping it, if this tab ran it): its calls fail with `err`. */
  private close(err: Error) {
    if (this.dead) return;
    this.leave();
    removeEventListener('pagehide', this.leave);
    this.dead = err;
    this.rpc.fail(err);
    this.waiters.splice(0).forEach((wake) => wake());
    clearInterval(this.liveness);
    this.leader?.stop();
    this.local?.terminate();
    this.quit.abort();
    this.channel.close();
  }

  private readonly leave = () => this.post({ kind: 'bye', tab: this.id, term: this.leader?.term });

  /** Holds the lead until the tab leaves: starts the engine, then serves. */
  private async lead(): Promise<void> {
    this.leading = true;
    const term = crypto.randomUUID();
    // The term's lock, held while this tab leads, is what the others check an announcement against.
    await new Promise<void>((held) => {
      void navigator.locks.request(this.locks.term(term), () => {
        held();
        return aborted(this.quit.signal);
      });
    });
    this.switchTo(null);
    this.post({ kind: 'leader', term, ready: false });
    try {
      this.local = await this.start();
    } catch (err) {
      // This tab cannot run the engine: it leaves, and the lock passes to the next tab, which tries its own.
      this.joined.reject(err);
      return this.close(err instanceof Error ? err : new EngineError(String(err)));
    }
    if (this.dead) return this.local.terminate();
    this.leader = new Leader(
      term,
      this.local.calls,
      (m) => this.post(m),
      () => this.openTabs(),
    );
    this.switchTo(term);
    this.post({ kind: 'leader', term, ready: true });
    await aborted(this.quit.signal);
  }

  private receive(message: Message) {
    if (this.leader) return this.leader.receive(message);
    switch (message.kind) {
      case 'leader':
        // Believed only from the tab that holds the term's lock.
        if (message.term !== this.term) {
          void this.holds(message.term).then((real) => real && this.switchTo(message.ready ? message.term : null));
        }
        break;
      case 'bye':
        // The leader's lock goes with its page, a moment after its goodbye.
        if (message.term && message.term === this.term) setTimeout(() => void this.checkLeader(), 250);
        break;
      case 'accepted':
      case 'progress':
      case 'chunk':
      case 'result':
        // Answers to this tab's calls, from the leader they were sent to.
        if (message.tab === this.id && message.term === this.term) this.rpc.receive(message);
        break;
    }
  }

  /** Whether a tab holds the lock of `term`, as its leader does. */
  private async holds(term: string): Promise<boolean> {
    const { held = [] } = await navigator.locks.query().catch(() => ({ held: [] as LockInfo[] }));
    return held.some((l) => l.name === this.locks.term(term));
  }

  /** The leader calls went to has let go of its term (closed, crashed): they will not be answered, and the tab asks
   * who leads now (the leader it followed may not have been the only one: a page that played one). */
  private async checkLeader() {
    const term = this.term;
    if (!term || this.leader || (await this.holds(term)) || this.term !== term) return;
    this.switchTo(null);
    this.post({ kind: 'hello' });
  }

  /** A new leader (or none for now): calls sent to the old one will not be answered. */
  private switchTo(term: string | null) {
    this.rpc.fail(leaderGone());
    this.term = term;
    if (term === null) return;
    this.joined.resolve();
    this.waiters.splice(0).forEach((wake) => wake());
  }

  private async call(method: Method, argument: unknown, control: CallControl): Promise<unknown> {
    const model = method === 'load' ? this.modelOf(argument as LoadRequest) : this.model;
    let value = await this.route(method, argument, model, control);
    if (method === 'load') this.model = model;
    if (method === 'unload') this.model = null;
    if (method === 'info') {
      const shared = { name: this.name, leader: this.leader !== null, tabs: (await this.openTabs()).size };
      value = { ...(value as EngineInfo), shared };
    }
    return value;
  }

  private async route(
    method: Method,
    argument: unknown,
    model: TabModel | null,
    control: CallControl,
  ): Promise<unknown> {
    for (;;) {
      if (this.dead) throw this.dead;
      if (this.leader) return this.leader.run(this.id, method, argument, model, control);
      if (this.term) {
        const sent = { taken: false };
        try {
          return await this.send(this.term, method, argument, model, control, sent);
        } catch (err) {
          // A call the leader never took never ran: it waits for the next leader rather than failing. (The tab may
          // send one between the leader's closing and noticing it: a user's message sent just then.)
          if (sent.taken || !(err instanceof EngineError && err.code === 'leader_gone')) throw err;
          continue;
        }
      }
      let wake!: () => void;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const woken = new Promise<void>((resolve, reject) => {
        wake = resolve;
        timer = setTimeout(
          () => reject(leaderTimeout(`no tab had it ready within ${LEADER_WAIT_MS / 1000} s`)),
          LEADER_WAIT_MS,
        );
        this.waiters.push(wake);
      });
      await abortable(woken, control.signal).finally(() => {
        clearTimeout(timer);
        this.waiters = this.waiters.filter((w) => w !== wake);
      });
    }
  }

  /** Sends a call to the leader of `term` (`sent.taken` once it answers that it took it); a call it has not taken
   * within ACCEPT_MS fails, with 'leader_gone' when that leader has let go of its term. */
  private send(
    term: string,
    method: Method,
    argument: unknown,
    model: TabModel | null,
    control: CallControl,
    sent: { taken: boolean },
  ): Promise<unknown> {
    let accepting: ReturnType<typeof setTimeout> | undefined;
    this.liveness ??= setInterval(() => void this.checkLeader(), LIVENESS_MS);
    return this.rpc
      .call(method, argument, control, {
        extra: { model },
        started: (id) => {
          accepting = setTimeout(
            () =>
              void this.holds(term).then((real) => {
                // Gone: every call to it fails with 'leader_gone', and the tab asks who leads now.
                if (!real) return void this.checkLeader();
                this.rpc.fail(leaderTimeout(`the running tab did not take the call within ${ACCEPT_MS / 1000} s`), id);
              }),
            ACCEPT_MS,
          );
        },
        accepted: () => {
          sent.taken = true;
          clearTimeout(accepting);
        },
      })
      .finally(() => {
        clearTimeout(accepting);
        if (this.rpc.size) return;
        clearInterval(this.liveness);
        this.liveness = undefined;
      });
  }

  /** Tabs asking for the same URL or { hf } model with the same options share it; a Blob is this load's own. */
  private modelOf(request: LoadRequest): TabModel {
    // A Blob has no identity to compare across tabs (and serialises as {}): its load is this tab's own.
    const blob =
      request.source instanceof Blob || Array.isArray(request.source) || request.options.promptState instanceof Blob;
    const key = blob ? `blob:${this.id}:${++this.loads}` : canonical(request);
    return { key, request };
  }

  private async openTabs(): Promise<Set<string>> {
    const { held = [] } = await navigator.locks.query();
    const prefix = this.locks.tabPrefix;
    return new Set(held.flatMap((l) => (l.name?.startsWith(prefix) ? [l.name.slice(prefix.length)] : [])));
  }

  private post(message: Message) {
    if (!this.quit.signal.aborted) this.channel.postMessage(stamp(message));
  }
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/** JSON with object keys sorted, so equal requests give equal strings. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}
