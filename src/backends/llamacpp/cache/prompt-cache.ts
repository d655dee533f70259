// Which KV cells a request can reuse, and keeping them for the next one.
//
// For a request the engine renders and tokenizes the whole prompt; prepare() picks a slot (slots.ts), fills it with
// the longest prefix of those tokens it can find — in the slot itself, in another slot, in a conversation saved in
// IndexedDB (persistence.ts), or in a saved system prompt — and trims it where the tokens diverge. The scheduler
// decodes the rest. Matching is by tokens, never by message counts, so a template that re-renders an earlier turn
// differently (reasoning stripped, other whitespace) only moves the divergence point.
//
// Conversation (IMC) slots are found by conversation_id, else by a hash of the message prefix, else by the longest
// common token prefix (>= minTokens). The system prompt cache (SPC) keeps the state of the rendered system prefix.
import { AbortError } from '../../../errors.ts';
import type { CacheSource, CacheStats, ChatMessage, Progress, Tool } from '../../../types.ts';
import { now } from '../../../core/clock.ts';
import { conversationKey } from './identity.ts';
import { exportCells } from './kv-io.ts';
import { Persistence } from './persistence.ts';
import { commonPrefix, hashMessages } from './prefix.ts';
import { type ContextHolder, lru, type Slot, Slots } from './slots.ts';
import type { KvStore } from './kv-store.ts';
import { SystemStates } from './system-states.ts';

/** A prompt's state shipped with the model (prompt-state/file-format.ts). */
export interface ShippedState {
  tokens: Int32Array;
  data: Uint8Array;
}

export interface CacheConfig {
  systemPrompt: boolean;
  conversations: boolean;
  minTokens: number;
  /** CacheOptions.chunkBytes: a saved chunk's most bytes, about (cache/persistence.ts). */
  chunkBytes: number;
}

/** A rendered system prefix (system messages and tools) long enough to cache. */
export interface SystemPrefix {
  key: string;
  tokens: Int32Array;
}

export interface CacheRequest {
  messages: ChatMessage[];
  tools: Tool[] | undefined;
  conversationId: string | undefined;
  tokens: Int32Array;
  system: SystemPrefix | null;
  onProgress?: (p: Progress) => void;
}

export interface Prepared {
  slot: Slot;
  /** Prompt tokens already in the slot; the scheduler decodes tokens[cached..]. */
  cached: number;
  source: CacheSource;
  /** When set, the scheduler calls captureSystem once the slot holds these tokens. */
  buildSystem: SystemPrefix | null;
  /** Told to the caller on the final chunk (a shipped prompt state that does not fit this prompt). */
  warning: string | null;
}

/** How a request on a slot ended (see release). */
export interface Outcome {
  /** The reply of a completed turn, as the assistant message the client sends back; null when it failed, was
   * aborted or only read its prompt. */
  reply: ChatMessage | null;
  error: unknown;
  /** Prompt position where a context shift cut the slot, if one did. */
  shiftedAt: number | null;
}

export class PromptCache {
  readonly slots: Slots;
  private readonly persistence: Persistence;
  private readonly systemStates = new SystemStates();
  private readonly hits = { none: 0, memory: 0, indexeddb: 0, 'prompt-state': 0 };
  /** The prompt state shipped with the model (LoadOptions.promptState). */
  private shipped: ShippedState | null = null;

  constructor(
    holder: ContextHolder,
    private readonly config: CacheConfig,
    store: KvStore | null,
    private readonly layout: string,
    nSlots: number,
  ) {
    this.slots = new Slots(holder, nSlots);
    this.persistence = new Persistence(store, layout, this.slots, config);
  }

  /** Reads the index of saved records (once), so that saving after a turn never waits for IndexedDB. */
  init(): Promise<void> {
    return this.persistence.init();
  }

  /** What the browser's storage limit did to the saves since the last call: the next answer's warnings. */
  takeSaveWarnings(): string[] {
    return this.persistence.takeWarnings();
  }

  async prepare(req: CacheRequest): Promise<Prepared> {
    const { tokens } = req;
    // The last prompt token is always decoded again: its logits start the reply.
    const usable = (n: number) => Math.min(n, tokens.length - 1);
    const free = this.slots.all.filter((s) => !s.pending);
    if (!free.length) throw new Error('every slot is busy');
    let prepared: Prepared;

    if (!this.config.conversations) {
      const slot = lru(free);
      this.slots.reset(slot);
      prepared = { slot, cached: 0, source: 'none', buildSystem: null, warning: null };
    } else {
      prepared = await this.prepareConversation(req, free, usable);
    }

    const { slot } = prepared;
    // A cached system prompt beats whatever prefix was found if it covers more.
    if (req.system && this.config.systemPrompt && prepared.cached < usable(req.system.tokens.length)) {
      const restored = await this.restoreSystem(slot, req.system, req.onProgress);
      if (restored) {
        prepared.cached = await this.slots.trim(slot, usable(req.system.tokens.length));
        prepared.source = restored;
        prepared.buildSystem = null;
      } else {
        prepared.buildSystem = req.system;
      }
    }
    if (this.shipped) await this.useShipped(prepared, this.shipped, tokens, usable);
    if (prepared.cached === 0) prepared.source = 'none';
    this.hits[prepared.source]++;
    slot.pending = true;
    slot.lastUsed = Date.now();
    return prepared;
  }

  private async prepareConversation(req: CacheRequest, free: Slot[], usable: (n: number) => number): Promise<Prepared> {
    const { tokens, conversationId } = req;
    const owner =
      conversationId !== undefined
        ? free.find((s) => s.conversationId === conversationId)
        : this.byMessageHash(free, req);
    // Tokens a slot can supply: its common prefix with the prompt, or less where its memory cannot roll back.
    const reuse = (s: Slot) => this.slots.reachable(s, usable(commonPrefix(s.tokens, tokens)));
    const ownerLcp = owner ? reuse(owner) : 0;

    // Another slot sharing a long prefix (the same system prompt, or a conversation that branched).
    let donor: Slot | null = null;
    let donorLcp = 0;
    for (const s of free) {
      if (s === owner) continue;
      const n = reuse(s);
      if (n > donorLcp) [donor, donorLcp] = [s, n];
    }
    if (donorLcp < this.config.minTokens) [donor, donorLcp] = [null, 0];

    const saved = await this.persistence.findConversation(req, usable);
    const savedLcp = saved?.lcp ?? 0;

    const best = Math.max(ownerLcp, donorLcp, savedLcp);
    if (owner && ownerLcp === best) {
      return {
        slot: owner,
        cached: await this.slots.trim(owner, ownerLcp),
        source: 'memory',
        buildSystem: null,
        warning: null,
      };
    }
    const slot = owner ?? this.slots.take(free, donor);
    if (saved && savedLcp === best) {
      if (await this.persistence.restoreConversation(slot, saved.meta, savedLcp, req.onProgress)) {
        const cached = await this.slots.trim(slot, savedLcp);
        // A record found by id or message hash continues that conversation; one found by tokens only starts a new one.
        const same = conversationId !== undefined || saved.byHash;
        assign(slot, conversationId, same ? saved.meta : null, this.layout);
        return { slot, cached, source: 'indexeddb', buildSystem: null, warning: null };
      }
    }
    this.slots.reset(slot);
    assign(slot, conversationId, null, this.layout);
    // (A failed restore may have evicted the donor to make room.)
    if (donor && donorLcp > 0 && donor.tokens.length >= donorLcp) {
      return {
        slot,
        cached: await this.slots.copyPrefix(donor, slot, donorLcp),
        source: 'memory',
        buildSystem: null,
        warning: null,
      };
    }
    return { slot, cached: 0, source: 'none', buildSystem: null, warning: null };
  }

  /** Takes a prompt state shipped with the model: prompts that start with its tokens begin after them. */
  ship(state: ShippedState): void {
    this.shipped = state;
  }

  /**
   * Starts the prompt from the shipped state when that covers more of it than what was found so far. Attention
   * caches take any prefix of it; a recurrent state is the state after its last token, and a sliding-window one keeps
   * only the window's last cells once read back (slots.ts), so there it is all or nothing.
   * A prompt that does not start with its tokens gets a warning (the site's prompts and its shipped state disagree).
   */
  private async useShipped(
    prepared: Prepared,
    shipped: ShippedState,
    tokens: Int32Array,
    usable: (n: number) => number,
  ): Promise<void> {
    const total = shipped.tokens.length;
    if (prepared.cached >= usable(total)) return;
    const lcp = commonPrefix(shipped.tokens, tokens);
    let n = this.slots.canCutRestored ? usable(lcp) : lcp === total && usable(lcp) === lcp ? lcp : 0;
    if (n < Math.min(total, this.config.minTokens)) n = 0; // a few shared tokens (a chat template's opening) are not worth it
    if (lcp < total) {
      prepared.warning =
        `the prompt state loaded with the model (${total} tokens) ${n > prepared.cached ? `was used for ${n} tokens only` : 'was not used'}: ` +
        `this prompt shares only its first ${lcp} tokens. Write the state again for this system prompt (engine.cache.exportPrompt).`;
    }
    if (n <= prepared.cached) return;
    const { slot } = prepared;
    this.slots.reset(slot);
    if (!(await this.slots.restore(slot, [{ data: shipped.data, end: total }], shipped.tokens))) {
      this.shipped = null;
      prepared.cached = 0;
      prepared.warning =
        'llama.cpp refused the prompt state loaded with the model; it is no longer used, and this prompt was read in full';
      return;
    }
    prepared.cached = await this.slots.trim(slot, n);
    prepared.source = 'prompt-state';
    if (prepared.buildSystem && prepared.buildSystem.tokens.length <= prepared.cached) prepared.buildSystem = null;
  }

  /** The slot whose message hash matches the start of this request, preferring the longest. */
  private byMessageHash(free: Slot[], req: CacheRequest): Slot | undefined {
    let found: Slot | undefined;
    for (const s of free) {
      if (!s.msgHash || s.conversationId !== null || s.msgCount > req.messages.length) continue;
      if (found && found.msgCount >= s.msgCount) continue;
      if (hashMessages(req.messages.slice(0, s.msgCount), req.tools) === s.msgHash) found = s;
    }
    return found;
  }

  private async restoreSystem(
    slot: Slot,
    system: SystemPrefix,
    onProgress?: (p: Progress) => void,
  ): Promise<CacheSource | null> {
    let source: CacheSource = 'memory';
    let state = this.systemStates.get(system.key);
    if (!state) {
      state = (await this.persistence.loadSystem(system.key, onProgress)) ?? undefined;
      if (state) {
        this.systemStates.keep(system.key, state);
        source = 'indexeddb';
      }
    }
    if (!state || commonPrefix(state.tokens, system.tokens) !== system.tokens.length) return null;
    this.slots.reset(slot);
    if (!(await this.slots.restore(slot, [{ data: state.data, end: system.tokens.length }], system.tokens))) {
      this.systemStates.delete(system.key);
      return null;
    }
    return source;
  }

  /** Called by the scheduler at the points a later request may want to go back to (see Slots.checkpoint). */
  checkpoint(slot: Slot): Promise<void> {
    return this.slots.checkpoint(slot);
  }

  /** Called by the scheduler once `slot` holds the system prefix's tokens: keeps their state for later requests. */
  async captureSystem(slot: Slot, system: SystemPrefix): Promise<void> {
    const n = system.tokens.length;
    if (slot.tokens.length < n || commonPrefix(slot.tokens, system.tokens) !== n) return;
    const t0 = now();
    const data = await exportCells(this.slots.ctx, slot.seq, this.slots.scratch, slot.tokens, 0, n);
    const state = { tokens: system.tokens, data };
    const exportMs = now() - t0;
    this.systemStates.keep(system.key, state);
    this.persistence.saveSystem(system.key, state, exportMs);
  }

  /**
   * Called by the scheduler when a request on `slot` ends. After a failure other than an abort the slot is emptied
   * (its cells may not match its tokens); after a context shift only the part before the cut is kept (the cells
   * after it were computed with context that is gone). After a completed turn the slot remembers which messages it
   * holds and its new cells are saved.
   */
  async release(slot: Slot, req: CacheRequest, outcome: Outcome): Promise<void> {
    let reply = outcome.reply;
    if (outcome.error !== undefined && !(outcome.error instanceof AbortError)) this.slots.reset(slot);
    if (outcome.shiftedAt !== null) {
      await this.slots.trim(slot, outcome.shiftedAt);
      reply = null;
    }
    slot.pending = false;
    slot.lastUsed = Date.now();
    if (!this.config.conversations) {
      this.slots.reset(slot); // nothing reuses a finished request's cells: free them for the running ones
      return;
    }
    if (reply === null) {
      slot.msgHash = null;
      slot.msgCount = 0;
      return;
    }
    const messages: ChatMessage[] = [...req.messages, reply];
    slot.msgHash = hashMessages(messages, req.tools);
    slot.msgCount = messages.length;
    await this.persistence.saveConversation(slot, req.tokens.length);
  }

  /** Resolves when every save queued so far is written. */
  flush(): Promise<void> {
    return this.persistence.flush();
  }

  async stats(): Promise<CacheStats> {
    return {
      ...(await this.persistence.stats()),
      memory: {
        slots: this.slots.all.filter((s) => s.tokens.length > 0).length,
        tokens: this.slots.used(),
        systemPrompts: this.systemStates.size,
      },
      hits: { ...this.hits },
    };
  }

  /** Forgets one conversation (memory and IndexedDB), or everything. */
  async clear(conversationId?: string): Promise<void> {
    await this.flush();
    for (const s of this.slots.all) {
      if (s.pending || (conversationId !== undefined && s.conversationId !== conversationId)) continue;
      this.slots.evict(s);
    }
    if (conversationId === undefined) this.systemStates.clear();
    await this.persistence.clear(conversationId);
  }
}

/** Names the conversation a slot now holds: its id, or the saved record (and its messages) it continues. */
function assign(
  slot: Slot,
  conversationId: string | undefined,
  meta: { key: string; msgHash: string | null; msgCount: number } | null,
  layout: string,
) {
  slot.conversationId = conversationId ?? null;
  slot.key = conversationId !== undefined ? conversationKey(conversationId, layout) : (meta?.key ?? null);
  slot.msgHash = meta?.msgHash ?? null;
  slot.msgCount = meta?.msgCount ?? 0;
}
