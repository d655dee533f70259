// The catalogue as the app shows it: a card per model with its download size (from the Hub), whether it fits this
// device and why not, the engine it will run on and how fast; the recommended one marked. A card downloads its model
// (progress with size, speed and time left), pauses (the model store keeps what came, and resumes from there, after a
// reload too), cancels (what came is deleted), and opens a stored model. A model that does not fit is never started.
import { formatBytes } from '../core/bytes.ts';
import { webUrls } from '../core/models/web-source.ts';
import type { HearthEngine } from '../index.ts';
import type { Progress, StoredModel } from '../types.ts';
import { describeProgress } from '../ui/progress.ts';
import { askSizes, type CatalogueModel, type HubSize, modelFiles } from './catalogue.ts';
import { type DeviceFacts, type Fit, modelFit, parseParams, recommend } from './fit.ts';

export interface CardActions {
  /** Downloads (or resumes) and loads the model; resolves when it is ready, rejects when it failed or was paused. */
  load(model: CatalogueModel, onProgress: (p: Progress) => void, signal: AbortSignal): Promise<void>;
}

interface Card {
  model: CatalogueModel;
  el: HTMLLIElement;
  size: HubSize | null;
  /** The Hub could not be asked for the size (unreachable, or offline): the card offers to ask again. */
  sizeFailed: boolean;
  stored: number;
  complete: boolean;
  fit: Fit;
  download: AbortController | null;
  /** Why the last download or load failed (not a pause). */
  error: string;
}

const el = <K extends keyof HTMLElementTagNameMap>(tag: K, props: Partial<HTMLElementTagNameMap[K]> = {}) =>
  Object.assign(document.createElement(tag), props);

const SPEED_WORDS: Record<NonNullable<Fit['speed']>, string> = {
  fast: 'fast',
  good: 'good speed',
  slow: 'slow',
  'very slow': 'very slow',
};

export class ModelsView {
  private readonly cards = new Map<string, Card>();
  private device: DeviceFacts | null = null;
  recommended: string | null = null;

  constructor(
    private readonly list: HTMLUListElement,
    private readonly engine: () => HearthEngine | null,
    private readonly actions: CardActions,
  ) {}

  /** Draws the catalogue with the sizes known so far. */
  show(models: CatalogueModel[], sizes: Record<string, HubSize>) {
    this.cards.clear();
    this.list.replaceChildren();
    for (const model of models) {
      const card: Card = {
        model,
        el: el('li', { className: 'model-card' }),
        size: sizes[model.id] ?? null,
        sizeFailed: false,
        stored: 0,
        complete: false,
        fit: modelFit(this.needs(model, null, 0), this.facts()),
        download: null,
        error: '',
      };
      card.el.dataset.model = model.id;
      this.cards.set(model.id, card);
      this.list.append(card.el);
    }
    this.refit();
  }

  setSize(id: string, size: HubSize) {
    const card = this.cards.get(id);
    if (card) card.size = size;
    this.refit();
  }

  /** Asks the Hub for the sizes not known (all cards, or those whose asking failed: the Retry button). */
  askSizes(onlyFailed = false) {
    const cards = [...this.cards.values()].filter((c) => !onlyFailed || c.sizeFailed);
    for (const card of cards) card.sizeFailed = false;
    if (onlyFailed) this.refit();
    void askSizes(
      cards.map((c) => c.model),
      (id, size) => this.setSize(id, size),
      (id) => {
        const card = this.cards.get(id);
        if (card && !card.size) card.sizeFailed = true;
        this.refit();
      },
    );
  }

  setDevice(device: DeviceFacts) {
    this.device = device;
    this.refit();
  }

  /** What the model store holds of each model (a paused download, or a complete one). */
  setStored(stored: StoredModel[]) {
    for (const card of this.cards.values()) {
      const ids = modelFiles(card.model).map((s) => webUrls(s).id);
      const found = ids.map((id) => stored.find((m) => m.id === id));
      card.stored = found.reduce((n, m) => n + (m?.downloaded ?? 0), 0);
      card.complete = found.every((m) => m?.complete);
    }
    this.refit();
  }

  /** The catalogue's models that the model store holds complete. */
  storedModels(): CatalogueModel[] {
    return [...this.cards.values()].filter((c) => c.complete).map((c) => c.model);
  }

  private facts(): DeviceFacts {
    return (
      this.device ?? {
        deviceMemoryGiB: null,
        freeStorage: null,
        backend: 'wasm',
        decodeBytesPerSecond: null,
        gpuBindingLimit: null,
        tokenOverheadSeconds: 0,
      }
    );
  }

  private needs(model: CatalogueModel, size: HubSize | null, stored: number) {
    return {
      bytes: size?.bytes ?? null,
      params: parseParams(model.params),
      stored,
      context: model.context,
      quant: model.quant,
      ...model.shape,
    };
  }

  private refit() {
    const cards = [...this.cards.values()];
    for (const card of cards) card.fit = modelFit(this.needs(card.model, card.size, card.stored), this.facts());
    this.recommended =
      recommend(cards.map((c) => ({ id: c.model.id, fit: c.fit, bytes: c.size?.bytes ?? null })))?.id ?? null;
    for (const card of cards) if (!card.download) this.draw(card);
  }

  private draw(card: Card, progress?: string, ratio?: number) {
    const { model, fit: f } = card;
    const head = el('div', { className: 'card-head' });
    head.append(el('h3', { textContent: model.name }));
    if (model.id === this.recommended)
      head.append(el('span', { className: 'badge recommended', textContent: 'Recommended' }));
    if (model.images) head.append(el('span', { className: 'badge', textContent: 'Reads images' }));
    const size = card.size
      ? `${formatBytes(card.size.bytes)} download`
      : card.sizeFailed
        ? 'size: the Hub could not be reached'
        : 'size: asking the Hub…';
    const facts = [model.params, model.quant, size, `${Math.round(model.context / 1024)}K context`, model.licence];
    const fitLine = el('p', { className: `card-fit ${f.fits ? 'fits' : 'no-fit'}` });
    fitLine.id = `fit-${model.id}`;
    fitLine.textContent = f.fits ? this.fitsText(card) : `Does not fit this device: ${f.reason}.`;
    const actions = el('div', { className: 'card-actions' });
    if (card.download) {
      const bar = el('progress', { max: 1, value: ratio ?? 0 });
      bar.setAttribute('aria-label', `Downloading ${model.name}`);
      actions.append(bar, el('span', { className: 'card-progress', textContent: progress ?? '' }));
      // A stored model only loads: nothing to pause, and Cancel would delete what the visitor keeps.
      if (!card.complete) {
        actions.append(this.button('Pause', 'pause', () => card.download?.abort()));
        actions.append(this.button('Cancel', 'cancel', () => void this.cancel(card)));
      }
    } else {
      const partial = !card.complete && card.stored > 0;
      const label = card.complete ? 'Chat' : partial ? 'Resume download' : 'Download';
      const go = this.button(label, 'go', () => void this.start(card));
      go.setAttribute('aria-describedby', fitLine.id);
      // Without a size the download learns it; it starts once the Hub was asked and the estimate fits.
      go.disabled = !f.fits || (!card.complete && card.size === null && !card.sizeFailed);
      actions.append(go);
      if (card.sizeFailed) actions.append(this.button('Ask the Hub again', 'retry', () => this.askSizes(true)));
      if (partial) {
        const pct = card.size ? ` (${Math.floor((card.stored / card.size.bytes) * 100)} %)` : '';
        actions.append(
          el('span', { className: 'card-progress', textContent: `Paused: ${formatBytes(card.stored)}${pct} kept` }),
        );
        actions.append(this.button('Cancel', 'cancel', () => void this.cancel(card)));
      }
    }
    card.el.replaceChildren(
      head,
      el('p', { className: 'card-facts muted', textContent: facts.join(' · ') }),
      el('p', { className: 'card-about', textContent: model.goodAt }),
      fitLine,
      actions,
    );
    if (card.error) card.el.append(el('p', { className: 'card-error', role: 'alert', textContent: card.error }));
  }

  private fitsText(card: Card): string {
    const f = card.fit;
    if (f.memory === null) return 'Fit: known once the Hub gives its size.';
    const about = f.estimated ? 'about ' : '';
    const engine =
      f.gpuMemory !== null ? `on the GPU, which holds ${about}${formatBytes(f.gpuMemory)} of it` : 'on the CPU';
    const speed =
      f.tokensPerSecond === null
        ? ''
        : ` · about ${Math.max(1, Math.round(f.tokensPerSecond))} tokens/s, ${SPEED_WORDS[f.speed!]}`;
    const note = f.note ? ` (${f.note})` : '';
    const estimate = f.estimated ? ' (estimated from its parameters: the Hub gave no size)' : '';
    return `Fits: ${about}${formatBytes(f.memory)} of memory at ${f.context} tokens of context${estimate} · runs ${engine}${note}${speed}`;
  }

  private button(text: string, kind: string, onClick: () => void): HTMLButtonElement {
    const b = el('button', { type: 'button', className: `card-${kind}`, textContent: text });
    b.addEventListener('click', onClick);
    return b;
  }

  private async start(card: Card) {
    if (card.download || !card.fit.fits) return;
    const download = new AbortController();
    card.download = download;
    card.error = '';
    const total = card.size?.bytes ?? 0;
    this.draw(card, card.complete ? 'Loading…' : 'Starting the download…', 0);
    try {
      await this.actions.load(
        card.model,
        (p) => {
          if (!card.download) return;
          const ratio = p.total ? p.loaded / p.total : total ? p.loaded / total : 0;
          // In place: a card drawn anew ten times a second would swallow clicks on its Pause and Cancel buttons.
          const bar = card.el.querySelector('progress');
          const text = card.el.querySelector('.card-progress');
          if (bar) bar.value = ratio;
          if (text) text.textContent = describeProgress(p);
        },
        download.signal,
      );
    } catch (err) {
      if (!download.signal.aborted) card.error = `Could not open ${card.model.name}: ${(err as Error).message}`;
    } finally {
      card.download = null;
      await this.refresh();
    }
  }

  /** Stops a download and deletes what came of it. */
  private async cancel(card: Card) {
    card.download?.abort();
    const engine = this.engine();
    for (const source of modelFiles(card.model)) await engine?.models.delete(source).catch(() => false);
    await this.refresh();
  }

  /** Reads the model store again. */
  async refresh() {
    const engine = this.engine();
    this.setStored(engine ? await engine.models.list().catch(() => []) : []);
  }
}
