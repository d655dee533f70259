// One loaded model and what is built on it: its context, the KV layout that sizes the context, the KV cache and the prompt
// preparation. The session owns the context: growth (growth.ts) replaces it through resizeContext, and the cache and
// the scheduler ask for `ctx` whenever they use it, so nobody holds a context that is gone.
import type { Speculative } from '../../../contract.ts';
import type { ModelInfo } from '../../../types.ts';
import type { PromptCache } from '../cache/prompt-cache.ts';
import type { ContextHolder } from '../cache/slots.ts';
import type { KvLayout } from '../cache/kv-layout.ts';
import type { Llama } from '../binding/llama.ts';
import type { LlamaProjector } from '../binding/mtmd.ts';
import type { LlamaModel } from '../binding/model.ts';
import { type ContextParams, LlamaContext } from '../binding/context.ts';
import { gpuStepTokens, N_BATCH } from '../binding/batch.ts';
import type { Prompts } from './prompt.ts';
import { Draft } from './draft.ts';

export interface SessionParts {
  llama: Llama;
  model: LlamaModel;
  ctx: LlamaContext;
  kv: KvLayout;
  /** Requests decoded together at most. */
  nParallel: number;
  info: ModelInfo;
  prompts: Prompts;
  /** The model file's identity (cache/identity.ts fileIdentity). */
  identity: string;
  /** The image/audio encoder loaded with the model (LoadOptions.projector), or null. */
  projector: LlamaProjector | null;
  /** Speculative decoding for requests that do not say (LoadOptions.speculative), or null. */
  speculative: Speculative | null;
  /** The draft model (LoadOptions.draft), its context (as many sequences as the main one's) and its KV layout key
   * (cache/identity.ts), or null. */
  draft: { model: LlamaModel; ctx: LlamaContext; layout: string } | null;
}

export class Session implements ContextHolder {
  readonly llama: Llama;
  readonly model: LlamaModel;
  readonly kv: KvLayout;
  readonly nParallel: number;
  readonly info: ModelInfo;
  readonly prompts: Prompts;
  readonly identity: string;
  readonly projector: LlamaProjector | null;
  readonly speculative: Speculative | null;
  /** The draft model's guesses (run/draft.ts), or null without one. */
  readonly draft: Draft | null;
  readonly cache: PromptCache;
  /** Tokens one decode step takes at most: N_BATCH, less on a software GPU adapter (binding/batch.ts). */
  readonly stepTokens: number;
  private context: LlamaContext;
  private draftContext: LlamaContext | null;

  /** `cache` builds the KV cache over this session's context. */
  constructor(parts: SessionParts, cache: (holder: ContextHolder) => PromptCache) {
    this.llama = parts.llama;
    this.model = parts.model;
    this.kv = parts.kv;
    this.nParallel = parts.nParallel;
    this.info = parts.info;
    this.prompts = parts.prompts;
    this.identity = parts.identity;
    this.projector = parts.projector;
    this.speculative = parts.speculative;
    this.context = parts.ctx;
    this.draftContext = parts.draft?.ctx ?? null;
    this.draft = parts.draft
      ? new Draft(
          parts.draft.model,
          () => this.draftContext,
          parts.ctx.params.nSeqMax,
          parts.model.nVocab,
          parts.draft.layout,
        )
      : null;
    const onGpu = parts.llama.gpu !== null && (parts.model.offloaded?.layers ?? 0) > 0;
    this.stepTokens = onGpu ? gpuStepTokens(parts.llama.gpuSoftware, parts.info.nParams) : N_BATCH;
    this.cache = cache(this);
  }

  get ctx(): LlamaContext {
    return this.context;
  }

  get draftCells(): Draft | null {
    return this.draft;
  }

  get canRollBack(): boolean {
    return rollsBack(this.info.memory.kind, this.context.params.swaFull);
  }

  /** A state read back keeps only the sliding window's last cells in those layers (cache/slots.ts). */
  get windowedState(): boolean {
    return this.info.memory.kind === 'swa';
  }

  /**
   * Recreates the context with `nCtx` cells; what the old one held is gone (growth.ts carries it over). The old one
   * is freed first: both may not fit the heap. When llama.cpp cannot make the new one (no memory), a context of the
   * old size is made again, that size becomes the limit, and the reason is returned.
   */
  async resizeContext(nCtx: number): Promise<Error | null> {
    const params = this.context.params;
    this.context.free();
    const draftParams = this.freeDraftContext(); // first too: the new context may need the room of both
    let refused: Error | null = null;
    try {
      this.context = await this.llama.guard(() => LlamaContext.create(this.model, { ...params, nCtx }));
    } catch (err) {
      this.context = await this.llama.guard(() => LlamaContext.create(this.model, params));
      this.kv.maxCtx = params.nCtx;
      refused = err as Error;
    }
    if (draftParams) await this.remakeDraftContext(draftParams, this.context.nCtx);
    return refused;
  }

  /** Frees the draft's context, which then holds nothing; its parameters, or null without a draft. */
  private freeDraftContext(): ContextParams | null {
    const old = this.draftContext;
    if (!old) return null;
    old.free();
    this.draftContext = null;
    this.draft!.forget();
    return old.params;
  }

  /**
   * The draft's context made again, empty, the size of the main one: the draft reads its conversations again beside
   * their next replies (run/draft.ts). Without memory for that, its old size (it then guesses for fewer
   * conversations at once: run/draft.ts frees the idle ones); without memory even for that, none: requests go on
   * without its guesses, the same replies.
   */
  private async remakeDraftContext(params: ContextParams, nCtx: number): Promise<void> {
    const model = this.draft!.model;
    for (const size of new Set([nCtx, params.nCtx])) {
      try {
        this.draftContext = await this.llama.guard(() => LlamaContext.create(model, { ...params, nCtx: size }));
        return;
      } catch (err) {
        if (this.llama.crashed) throw err;
      }
    }
    console.warn(`[hearth] no memory for the draft model's context: requests go on without its guesses`);
  }

  /** Frees the contexts and the models (not after a crash: the module is gone). */
  free(): void {
    if (this.llama.crashed) return;
    this.context.free();
    this.draftContext?.free();
    this.draft?.model.free();
    this.projector?.free();
    this.model.free();
  }
}

/**
 * Whether a model's memory can go back to any earlier token (seq_rm anywhere). A full-size SWA cache (swa_full) keeps
 * every token, so it rolls back like attention; a window-sized one has dropped the tokens that slid out of the
 * window, and goes back only to its checkpoints, like recurrent state.
 */
export function rollsBack(kind: string, swaFull: boolean | undefined): boolean {
  return kind === 'attention' || (kind === 'swa' && swaFull !== false);
}

/** Why speculative decoding cannot run on memory that does not roll back (the refusal's and the warning's words). */
export function noGuesses(kind: string): string {
  return `a ${kind} model's state cannot drop the guesses the model does not take (llama.cpp rolls back only attention caches)`;
}
