// Loading a model: the source opened and checked (size, GGUF header) before llama.cpp sees it, the model read into
// the wasm heap, its context sized (kv-layout.ts), and the KV cache and prompt preparation built on them. Every
// failure is a ModelLoadError that says what to do, and leaves nothing half-loaded behind.
import type { LoadRequest, Speculative } from '../../contract.ts';
import { resolveSpeculative } from '../../core/speculative.ts';
import { AbortError, HearthError, ModelLoadError } from '../../errors.ts';
import type { LoadOptions, ModelInfo, Progress } from '../../types.ts';
import {
  PromptStateMismatch,
  readPromptState,
  readPromptStateHeader,
  type Readable,
  type StateTarget,
} from './prompt-state/file-format.ts';
import { fileIdentity, layoutKey } from './cache/identity.ts';
import { type CacheConfig, PromptCache } from './cache/prompt-cache.ts';
import { Slots } from './cache/slots.ts';
import type { KvStore } from './cache/kv-store.ts';
import { kvBytesPerToken, kvLayout, kvType } from './cache/kv-layout.ts';
import type { Llama } from './binding/llama.ts';
import { LlamaModel } from './binding/model.ts';
import { LlamaContext } from './binding/context.ts';
import { LlamaProjector } from './binding/mtmd.ts';
import { Prompts } from './run/prompt.ts';
import { N_BATCH } from './binding/batch.ts';
import { noGuesses, rollsBack, Session } from './run/session.ts';
import { checkBeforeDownload, checkModelFile, type GpuPlacement } from '../../core/models/check.ts';
import type { WebFile } from '../../core/models/web-source.ts';
import type { ModelFile } from '../../core/models/file.ts';
import { openSource, type SourceOptions } from '../../core/models/source.ts';

/** Conversations whose KV state stays in memory at once (they share the context's cells). */
const N_SLOTS = 4;
const DEFAULT_PARALLEL = 4;
/** Sliding-window models keep a full-size cache for those layers unless LoadOptions.swaFull is false: see
 * docs/kv-cache.md. */
const DEFAULT_SWA_FULL = true;
/** LoadOptions.gpuLayers' default: every layer (llama.cpp caps n_gpu_layers at the model's count). */
const ALL_LAYERS = 1 << 24;

export interface LoadSettings {
  threads: number;
  cache: CacheConfig;
  /** Where saved KV state goes; null: nowhere. */
  store: KvStore | null;
  /** LoadOptions.promptState opened (backends/llamacpp/prompt-state/open-file.ts): the file, or why there is none. */
  promptState?: Readable | { warning: string } | null;
  /** LoadOptions.projector opened: the mmproj file that reads the model's images and audio. */
  projector?: ModelFile | null;
  /** LoadOptions.draft opened: the draft model for speculative decoding. */
  draft?: ModelFile | null;
  /** The most the module's heap holds (wasm32's 4 GiB, or the memory64 build's). */
  heapBytes: number;
}

/**
 * Opens a model source and checks it can be a model this engine holds, before llama.cpp reads it. `gpu`: every layer
 * goes to that adapter, so `maxBytes` bounds the heap's share of the model (read from its header), not its size.
 */
export async function openModelFile(
  source: LoadRequest['source'],
  maxBytes: number,
  opts: SourceOptions & Pick<LoadOptions, 'allowScalarKernels'> & { gpu?: GpuPlacement },
): Promise<ModelFile> {
  // On the GPU engine the size alone says nothing: its header does, read from the server before any download.
  const checkBefore = opts.gpu ? (files: WebFile[]) => checkBeforeDownload(files, maxBytes, opts) : undefined;
  const file = await openSource(source, { ...opts, maxBytes: opts.gpu ? undefined : maxBytes, checkBefore });
  await checkModelFile(file, maxBytes, { ...opts, tensorTypes: true });
  return file;
}

/** Reads `file` into llama.cpp and builds a session on it. */
export async function loadSession(
  llama: Llama,
  file: ModelFile,
  options: LoadOptions,
  settings: LoadSettings,
): Promise<Session> {
  const identity = await fileIdentity(file, options);
  const state = settings.promptState ?? null;
  const stateHeader = state && 'read' in state ? await readPromptStateHeader(state).catch(() => null) : null;
  // Without KV types of its own, the cache takes the state's (of this model): a state written with f16 needs an f16
  // cache.
  if (stateHeader?.header.model === identity) {
    options = {
      ...options,
      cacheTypeK: options.cacheTypeK ?? kvType(stateHeader.header.typeK),
      cacheTypeV: options.cacheTypeV ?? kvType(stateHeader.header.typeV),
    };
  }
  const model = await readModel(llama, file, options);
  let ctx: LlamaContext | null = null;
  let projector: LlamaProjector | null = null;
  let draft: { model: LlamaModel; ctx: LlamaContext | null; layout: string } | null = null;
  try {
    if (settings.projector) {
      projector = await readProjector(llama, model, settings.projector, settings.threads, options);
    }
    const shape = model.shape();
    const info = modelInfo(model, file, shape);
    const swaFull = options.swaFull ?? DEFAULT_SWA_FULL;
    const canGuess = rollsBack(info.memory.kind, swaFull);
    if (settings.draft && canGuess) {
      draft = { model: await readDraft(llama, model, settings.draft, options), ctx: null, layout: '' };
    }
    const nav = globalThis.navigator as { deviceMemory?: number } | undefined;
    // The projector's and the draft's weights share the heap with the model's: the KV cache gets what they leave, and
    // shares it with the draft's (f16, the context's size: below).
    const kv = kvLayout(
      shape,
      shape.sizeBytes + (settings.projector?.size ?? 0) + (settings.draft?.size ?? 0),
      options,
      nav?.deviceMemory ? nav.deviceMemory * 1024 ** 3 : undefined,
      settings.heapBytes,
      draft ? kvBytesPerToken(draft.model.shape(), 'f16', 'f16') : 0,
    );
    const nParallel = options.nParallel ?? DEFAULT_PARALLEL;
    // Slots hold the running requests and, between requests, the conversations kept in memory.
    const nSlots = settings.cache.conversations ? Math.max(N_SLOTS, nParallel) : nParallel;
    ctx = await llama.guard(() =>
      LlamaContext.create(model, {
        nCtx: kv.initialCtx,
        nBatch: N_BATCH,
        nUbatch: N_BATCH,
        nSeqMax: Slots.sequencesNeeded(nSlots),
        threads: settings.threads,
        typeK: kv.typeK,
        typeV: kv.typeV,
        flashAttn: kv.flashAttn,
        swaFull,
      }),
    );
    const layout = layoutKey(identity, llama.llamaBuild, ctx.params);
    if (draft) {
      // Sized as the main context, which it follows (run/session.ts); f16 cells: its own are small. Plain attention,
      // as the model's unquantized cache (kv-layout.ts), and a layout that is the same on every device.
      draft.ctx = await llama.guard(() =>
        LlamaContext.create(draft!.model, { ...ctx!.params, typeK: 'f16', typeV: 'f16', flashAttn: 0, swaFull: true }),
      );
      const d = draft.model.shape();
      info.draft = { name: draft.model.metadata()['general.name'] || settings.draft!.name, ...pick(d) };
      draft.layout = layoutKey(await fileIdentity(settings.draft!, options), llama.llamaBuild, draft.ctx.params);
    }
    const prompts = new Prompts(
      llama,
      model,
      {
        systemPrompt: settings.cache.systemPrompt,
        minTokens: settings.cache.minTokens,
        layout,
        messageEnds: !canGuess,
      },
      projector,
    );
    info.input = [
      'text',
      ...(projector?.image ? ['image' as const] : []),
      ...(projector?.audio ? ['audio' as const] : []),
    ];
    const session = new Session(
      {
        llama,
        model,
        ctx,
        kv,
        nParallel,
        info,
        prompts,
        identity,
        projector,
        speculative: defaultSpeculative(info, canGuess, options, settings.draft != null),
        draft: draft?.ctx ? { model: draft.model, ctx: draft.ctx, layout: draft.layout } : null,
      },
      (holder) => new PromptCache(holder, settings.cache, settings.store, layout, nSlots),
    );
    await session.cache.init();
    options.onProgress?.({ phase: 'load', loaded: file.size, total: file.size });
    if (state) {
      await shipState(
        session,
        state,
        { identity, llamaBuild: llama.llamaBuild, kv: ctx.params, nVocab: model.nVocab },
        options.onProgress,
      );
    }
    return session;
  } catch (err) {
    if (!llama.crashed) {
      ctx?.free();
      draft?.ctx?.free();
      draft?.model.free();
      projector?.free();
      model.free();
    }
    if (err instanceof HearthError) throw err;
    const why = err instanceof Error ? err.message : 'llama.cpp raised an exception (see the log)';
    // Memory: llama.cpp could not create the context (its buffers), or the wasm heap could not grow. Only this says
    // the device cannot run the model (a fallback server may take it: api/router.ts); the rest is a failure.
    const memory = !ctx || err instanceof RangeError;
    throw new ModelLoadError(`could not set up ${file.name}: ${why}`, 'context_failed', { memory });
  }
}

/** The model's weights in the heap, with load progress; a ModelLoadError with llama.cpp's reason when it refuses. */
async function readModel(llama: Llama, file: ModelFile, options: LoadOptions): Promise<LlamaModel> {
  const mark = llama.log.mark();
  const mounted = await file.mount(llama.mod);
  let model: LlamaModel | null = null;
  try {
    llama.mod.hearthProgress = (p) => {
      options.onProgress?.({ phase: 'load', loaded: Math.round(p * file.size), total: file.size });
      return !options.signal?.aborted;
    };
    const gpuLayers = llama.gpu ? (options.gpuLayers ?? ALL_LAYERS) : 0;
    model = await llama.guard(() => LlamaModel.load(llama, mounted.path, { gpuLayers }));
  } finally {
    llama.mod.hearthProgress = undefined;
    mounted.unmount(); // llama.cpp has copied the tensors; the file is no longer read
  }
  if (model) {
    const offloaded = llama.log
      .since(mark)
      .join('\n')
      .match(/offloaded (\d+)\/(\d+) layers to GPU/);
    if (offloaded) model.offloaded = { layers: Number(offloaded[1]), of: Number(offloaded[2]) };
  }
  if (!model) {
    if (options.signal?.aborted) throw new AbortError('model load aborted');
    const log = llama.log.since(mark);
    const why =
      llama.log
        .since(mark, true)
        .filter((l) => l.startsWith('error'))
        .join(' | ') || 'no reason logged';
    const arch = log.join('\n').match(/unknown model architecture: '([^']*)'/)?.[1];
    if (arch !== undefined) {
      throw new ModelLoadError(
        `${file.name} is a model of architecture '${arch}', which this build of llama.cpp ` +
          `(${llama.llamaBuild}) does not know. Pick a model of a supported architecture (Llama, Qwen2/3/3.5, Gemma, ` +
          'Phi, Mistral, LFM2, SmolLM…).',
        'unsupported_architecture',
        { architecture: arch, log },
      );
    }
    throw new ModelLoadError(`llama.cpp could not load ${file.name}: ${why}`, 'unsupported', { log });
  }
  return model;
}

/** The projector read next to the model; a ModelLoadError when it is not a projector for this model. */
async function readProjector(
  llama: Llama,
  model: LlamaModel,
  file: ModelFile,
  threads: number,
  options: LoadOptions,
): Promise<LlamaProjector> {
  const identity = await fileIdentity(file, options);
  const mark = llama.log.mark();
  const mounted = await file.mount(llama.mod);
  let projector: LlamaProjector | null;
  try {
    projector = await llama.guard(() => LlamaProjector.load(llama, model, mounted.path, threads, identity));
  } finally {
    mounted.unmount();
  }
  if (!projector) {
    const why =
      llama.log
        .since(mark, true)
        .filter((l) => /error|fail/i.test(l))
        .slice(-2)
        .join(' | ') || 'no reason logged';
    throw new ModelLoadError(
      `${file.name} is not a projector (mmproj GGUF) this model and llama.cpp build can use: ${why}`,
      'invalid_projector',
      { log: llama.log.since(mark) },
    );
  }
  return projector;
}

/** LoadOptions.speculative for the requests that do not say (with a draft model, its guesses); null (and a warning)
 * where the memory cannot drop the guesses the model does not take (the draft model is then not read). */
function defaultSpeculative(
  info: ModelInfo,
  canGuess: boolean,
  options: LoadOptions,
  withDraft: boolean,
): Speculative | null {
  const asked = options.speculative ?? (withDraft ? { kind: 'draft' as const } : undefined);
  if (!asked) return null;
  if (canGuess) return resolveSpeculative(asked, 'speculative');
  const warning = `speculative decoding is off${withDraft ? ' and the draft model not loaded' : ''}: ${noGuesses(info.memory.kind)}`;
  console.warn(`[hearth] ${warning}`);
  info.warnings = [...(info.warnings ?? []), warning];
  return null;
}

/**
 * The draft model read beside the model (its layers where the model's go), checked to be one speculative decoding
 * can use: the same vocabulary (llama.cpp's rule: at most 128 tokens more or fewer, as between Qwen2.5's sizes, and
 * every shared token the same text and kind; the same BOS where one is added), and memory that drops refused guesses. A
 * ModelLoadError 'invalid_draft' otherwise.
 */
async function readDraft(llama: Llama, main: LlamaModel, file: ModelFile, options: LoadOptions): Promise<LlamaModel> {
  let draft: LlamaModel;
  try {
    draft = await readModel(llama, file, options);
  } catch (err) {
    if (!(err instanceof ModelLoadError)) throw err;
    throw new ModelLoadError(`the draft model: ${err.message}`, err.code, err.details);
  }
  const why = draftMismatch(main, draft);
  if (why) {
    draft.free();
    throw new ModelLoadError(
      `${file.name} cannot be this model's draft: ${why}. Pick a smaller model of the same family (the same tokenizer)`,
      'invalid_draft',
    );
  }
  return draft;
}

/** Why `draft` cannot guess for `main` (see readDraft), or null. */
function draftMismatch(main: LlamaModel, draft: LlamaModel): string | null {
  const kind = draft.memory().kind;
  if (!rollsBack(kind, true)) return `a ${kind} model's state cannot drop the guesses the model refuses`;
  if (Math.abs(main.nVocab - draft.nVocab) > MAX_VOCAB_DIFFERENCE) {
    return `its vocabulary has ${draft.nVocab} tokens, the model's ${main.nVocab}`;
  }
  if (main.addBos !== draft.addBos || (main.addBos && main.bos !== draft.bos)) return 'it begins prompts otherwise';
  const t = main.vocabDifference(draft);
  return t < 0 ? null : `token ${t} is another in its vocabulary`;
}

/** llama.cpp's SPEC_VOCAB_MAX_SIZE_DIFFERENCE (common/speculative.cpp). */
const MAX_VOCAB_DIFFERENCE = 128;

function pick(shape: ReturnType<LlamaModel['shape']>) {
  return { sizeBytes: shape.sizeBytes, nParams: shape.nParams, nLayer: shape.nLayer, nEmbd: shape.nEmbd };
}

/** Hands the session's cache a shipped prompt state that fits the model, else says in info.warnings why not. */
async function shipState(
  session: Session,
  state: Readable | { warning: string },
  target: StateTarget,
  onProgress?: (p: Progress) => void,
) {
  session.info.promptState = null;
  let warning: string;
  if ('read' in state) {
    try {
      onProgress?.({ phase: 'restore', file: 'prompt-state', loaded: 0, total: state.size });
      const shipped = await readPromptState(state, target);
      onProgress?.({ phase: 'restore', file: 'prompt-state', loaded: state.size, total: state.size });
      session.cache.ship(shipped);
      session.info.promptState = { tokens: shipped.tokens.length, bytes: shipped.data.length };
      return;
    } catch (err) {
      if (!(err instanceof PromptStateMismatch)) throw err;
      warning = `the prompt state was not used, prompts are read in full: ${err.message}`;
    }
  } else {
    warning = state.warning;
  }
  console.warn(`[hearth] ${warning}`);
  session.info.warnings = [...(session.info.warnings ?? []), warning];
}

function modelInfo(model: LlamaModel, file: ModelFile, shape: ReturnType<LlamaModel['shape']>): ModelInfo {
  const metadata = model.metadata();
  return {
    name: metadata['general.name'] || file.name,
    description: model.description,
    architecture: metadata['general.architecture'] || 'unknown',
    sizeBytes: shape.sizeBytes,
    nParams: shape.nParams,
    nCtxTrain: shape.nCtxTrain,
    nEmbd: shape.nEmbd,
    nLayer: shape.nLayer,
    nHead: shape.nHead,
    nHeadKv: shape.nHeadKv,
    nVocab: shape.nVocab,
    bosToken: model.bos,
    eosToken: model.eos,
    eogTokens: [...model.eogTokens],
    chatTemplate: model.chatTemplate,
    memory: model.memory(),
    metadata,
  };
}
