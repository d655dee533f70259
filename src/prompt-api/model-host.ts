// The engine and the model behind the built-in AI classes of one configuration (LanguageModel, Summarizer, Writer,
// Rewriter): made on first use, the model loaded once for all of them, its download's progress told to each create()
// that waits on it, and where the model stands for availability().
import type { HearthEngine, LoadOptions, ModelSource } from '../types.ts';
import { abortable } from '../core/abort.ts';
import { isWebSource, webUrls } from '../core/models/web-source.ts';

export type Availability = 'unavailable' | 'downloadable' | 'downloading' | 'available';

export interface PromptApiOptions {
  /** The engine sessions run on, or how to make it (called once, on first use). */
  engine: HearthEngine | (() => Promise<HearthEngine>);
  /** The model: loaded on the first create(), downloaded into the model store the first time. */
  model: ModelSource;
  /** Options of that load (nCtx, projector, …). */
  load?: Omit<LoadOptions, 'signal' | 'onProgress'>;
  /** The languages the model reads and writes (BCP 47 tags; 'en' covers 'en-GB'), as its model card lists them:
   * expected languages outside them are 'unavailable'. Default: any language a browser can name. */
  languages?: string[];
}

/** What create() takes of every class: its abort signal, and the monitor that hears of the download. */
export interface CreateCore {
  signal?: AbortSignal;
  monitor?: (m: EventTarget) => void;
}

export class ModelHost {
  private engine: Promise<HearthEngine> | null = null;
  private loading: Promise<HearthEngine> | null = null;
  private loaded = false;
  private readonly monitors = new Set<(fraction: number) => void>();

  constructor(readonly config: PromptApiOptions) {}

  /** The engine, made on the first call. */
  getEngine(): Promise<HearthEngine> {
    const e = this.config.engine;
    this.engine ??= typeof e === 'function' ? e() : Promise.resolve(e);
    return this.engine;
  }

  /**
   * Where the model stands: loaded ('available', with the inputs it reads), loading ('downloading'), in the model
   * store or a local file ('available'), or still to download ('downloadable').
   */
  async state(): Promise<{ availability: Exclude<Availability, 'unavailable'>; reads: string[] | null }> {
    if (this.loaded) {
      const model = (await (await this.getEngine()).info()).model;
      return { availability: 'available', reads: model?.input ?? ['text'] };
    }
    if (this.loading) return { availability: 'downloading', reads: null };
    return { availability: (await this.isStored()) ? 'available' : 'downloadable', reads: null };
  }

  /**
   * The engine with the model loaded, for a create() whose availability was `state`: a first download needs the
   * user to have interacted with the page (NotAllowedError), as the specification says; the monitor hears of it.
   */
  async open(options: CreateCore, state: Availability): Promise<HearthEngine> {
    const nav = globalThis.navigator as Navigator & { userActivation?: { hasBeenActive: boolean } };
    if (state === 'downloadable' && nav?.userActivation && !nav.userActivation.hasBeenActive) {
      throw new DOMException('a download needs the user to have interacted with the page', 'NotAllowedError');
    }
    return this.withMonitor(options);
  }

  /** The engine with the model loaded (one load for every create() that waits on it); progress to the monitors. */
  private ready(): Promise<HearthEngine> {
    this.loading ??= (async () => {
      const e = await this.getEngine();
      await e.load(this.config.model, {
        ...this.config.load,
        onProgress: (p) => {
          if (p.phase !== 'download' || !p.total) return;
          for (const m of this.monitors) m(p.loaded / p.total);
        },
      });
      this.loaded = true;
      return e;
    })();
    this.loading.catch(() => {
      this.loading = null; // a failed load is tried again by the next create()
    });
    return this.loading;
  }

  /** Whether the model loads without a download: a local file, or one the model store holds whole under the id the
   * store gives it (a { hf } file's is its resolve URL on the engine's Hub or a mirror: the same path on any host). */
  private async isStored(): Promise<boolean> {
    const m = this.config.model;
    if (!isWebSource(m)) return true; // a File, a Blob, a path
    let id: string;
    try {
      id = webUrls(m).id;
    } catch {
      return false; // not a source that loads: the load says why
    }
    const path = (url: string) => new URL(url).pathname;
    const list = (await (await this.getEngine()).models.list().catch(() => [])).filter((s) => s.complete);
    return list.some((s) => (typeof m === 'string' ? s.id === id : path(s.id) === path(id)));
  }

  /** The loaded engine, with create()'s monitor told the download's progress (0 first and 1 last, as the
   * specification's monitors are, in steps of 1/65536). */
  private async withMonitor({ monitor, signal }: CreateCore): Promise<HearthEngine> {
    if (!monitor) return loadedOrAborted(this.ready(), signal);
    const target = new EventTarget();
    monitor(target); // a monitor that throws rejects create() with its error
    let last = -1;
    const tell = (fraction: number) => {
      const loaded = fraction >= 1 ? 1 : Math.floor(fraction * 0x10000) / 0x10000;
      if (loaded <= last || signal?.aborted) return;
      last = loaded;
      target.dispatchEvent(progressEvent(loaded));
    };
    tell(0);
    this.monitors.add(tell);
    try {
      const e = await loadedOrAborted(this.ready(), signal);
      tell(1);
      return e;
    } finally {
      this.monitors.delete(tell);
    }
  }
}

/** A 'downloadprogress' event: a ProgressEvent where there is one (browsers), else an Event with its fields (Node). */
function progressEvent(loaded: number): Event {
  const init = { loaded, total: 1, lengthComputable: true };
  if (typeof ProgressEvent === 'function') return new ProgressEvent('downloadprogress', init);
  return Object.assign(new Event('downloadprogress'), init);
}

/** The model loaded, or the signal's own reason as soon as it aborts (the load goes on for the next create()), as the
 * specification's create() rejects. */
function loadedOrAborted(p: Promise<HearthEngine>, signal?: AbortSignal): Promise<HearthEngine> {
  return abortable(p, signal).catch((err) => {
    throw signal?.aborted ? signal.reason : err;
  });
}

/** Whether the model takes every one of these languages (a RangeError, as the specification has it, for a malformed
 * tag): one of the configuration's `languages`, or without them any language a browser can name. */
export function languagesTaken(tags: string[], config: PromptApiOptions): boolean {
  const canonical = Intl.getCanonicalLocales(tags);
  if (config.languages) {
    const taken = new Set(Intl.getCanonicalLocales(config.languages).map(primary));
    return canonical.every((tag) => taken.has(primary(tag)));
  }
  const names = new Intl.DisplayNames(['en'], { type: 'language', fallback: 'none' });
  return canonical.every((tag) => names.of(tag) !== undefined);
}

const primary = (tag: string) => tag.split('-')[0]!;
