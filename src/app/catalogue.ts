// The models the app offers (catalogue.json), with their download sizes from the Hugging Face Hub's API — asked once
// and kept, so the catalogue shows them offline and on the next visit. The Hub's answer goes through the model store's
// own reading of it (core/models/web-source.ts): the same sizes and sha256 the download is then checked against.
import type { HfFile } from '../types.ts';
import { webModel } from '../core/models/web-source.ts';
import list from './catalogue.json';

export interface CatalogueModel {
  id: string;
  name: string;
  /** Parameters, as people say it: "0.5B". */
  params: string;
  hf: HfFile;
  /** The projector (mmproj GGUF) in the same repo, for models that read images. */
  projector?: string;
  quant: string;
  context: number;
  /** The attention shape (the KV cache's size) and the token embedding's (the largest matrix): its config.json. */
  shape: { layers: number; kvHeads: number; headDim: number; vocab: number; embd: number };
  licence: string;
  goodAt: string;
  images?: boolean;
}

/** What the Hub said of a model's files: bytes of all of them (model and projector). */
export interface HubSize {
  bytes: number;
  /** When the Hub said it (ms since the epoch). */
  at: number;
}

const SIZES = 'hearth-catalogue-sizes';
/** The Hub is asked again after this: a repo's files can change. */
const SIZE_MAX_AGE_MS = 7 * 24 * 3600 * 1000;

export const CATALOGUE: CatalogueModel[] = list.models as CatalogueModel[];

/** The entries of a catalogue file that are complete and sane (a test server's, or one edited by hand). */
export function validEntries(value: unknown): CatalogueModel[] {
  const models = (value as { models?: unknown } | null)?.models;
  if (!Array.isArray(models)) return [];
  const count = (n: unknown) => Number.isSafeInteger(n) && (n as number) > 0;
  return models.filter((m: CatalogueModel) => {
    if (!m || typeof m !== 'object') return false;
    const text = [m.id, m.name, m.params, m.quant, m.licence, m.goodAt, m.hf?.repo, m.hf?.file];
    if (!text.every((t) => typeof t === 'string' && t.length > 0)) return false;
    if (m.projector !== undefined && typeof m.projector !== 'string') return false;
    const s = m.shape;
    return count(m.context) && [s?.layers, s?.kvHeads, s?.headDim, s?.vocab, s?.embd].every(count);
  });
}

/** The sizes kept from earlier answers of the Hub, by model id. */
export function keptSizes(): Record<string, HubSize> {
  try {
    const kept = JSON.parse(localStorage.getItem(SIZES) ?? '{}') as Record<string, HubSize>;
    return Object.fromEntries(
      Object.entries(kept).filter(([, s]) => Number.isSafeInteger(s?.bytes) && s.bytes > 0 && Number.isFinite(s.at)),
    );
  } catch {
    return {};
  }
}

/** The model's files as the model store will download them: the model, and its projector. */
export function modelFiles(m: CatalogueModel): Array<{ hf: HfFile }> {
  return [{ hf: m.hf }, ...(m.projector ? [{ hf: { ...m.hf, file: m.projector } }] : [])];
}

/** How long the Hub may take to give a model's size before its card says it could not be reached. */
const SIZE_TIMEOUT_MS = 20_000;

/**
 * Asks the Hub for the sizes of the models not known (or known for more than a week), `onSize` as each answers and
 * `onFail` for each it could not give (the Hub unreachable, a file without a size); an unreachable Hub leaves the kept
 * sizes. Nothing is asked while the browser is offline: every model not known fails at once.
 */
export async function askSizes(
  models: CatalogueModel[],
  onSize: (id: string, size: HubSize) => void,
  onFail: (id: string) => void = () => {},
  signal?: AbortSignal,
): Promise<void> {
  const kept = keptSizes();
  const stale = models.filter((m) => !kept[m.id] || Date.now() - kept[m.id]!.at > SIZE_MAX_AGE_MS);
  if (!navigator.onLine) {
    for (const m of stale) if (!kept[m.id]) onFail(m.id);
    return;
  }
  await Promise.all(
    stale.map(async (m) => {
      try {
        // A Hub behind a firewall that drops packets never answers: a card says so after SIZE_TIMEOUT_MS.
        const timeout = AbortSignal.timeout(SIZE_TIMEOUT_MS);
        const within = signal ? AbortSignal.any([signal, timeout]) : timeout;
        const answers = await Promise.all(modelFiles(m).map((s) => webModel(s, { signal: within })));
        const sizes = answers.flatMap((a) => a.files.map((f) => f.size));
        if (sizes.some((s) => s === null)) throw new Error('a file without a size');
        const size = { bytes: sizes.reduce((a, b) => a! + b!, 0)!, at: Date.now() };
        kept[m.id] = size;
        try {
          localStorage.setItem(SIZES, JSON.stringify(kept));
        } catch {
          // storage full or off: the size is shown, not kept
        }
        onSize(m.id, size);
      } catch {
        // the Hub did not answer for this model: a size kept from before stays; else the card says so
        if (!kept[m.id]) onFail(m.id);
      }
    }),
  );
}
