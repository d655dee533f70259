// The first thing the app shows: the catalogue (models-view.ts) with this device's facts, the storage the models take
// and whether the browser keeps it, and — before a download — the request that it keep it.
import { formatBytes } from '../core/bytes.ts';
import type { HearthEngine } from '../index.ts';
import type { ModelStoreUsage } from '../types.ts';
import { CATALOGUE, type CatalogueModel, keptSizes, validEntries } from './catalogue.ts';
import { deviceFacts, freeStorage } from './device.ts';
import type { ModelsView } from './models-view.ts';

export interface FirstRunControls {
  firstRun: HTMLElement;
  deviceLine: HTMLElement;
  storageLine: HTMLElement;
}

const EXTRA_CATALOGUE = 'hearth-test-catalogue';

/**
 * Before a download: asks the browser to keep this site's storage (navigator.storage.persist()), so that a downloaded
 * model is not cleared when the disk runs low. Asked on the visitor's click, where a browser that prompts for it has
 * a reason to show. Not waited for: Firefox asks the visitor, who may answer late or never, and the download need not
 * wait; `answered` runs when the browser has answered (the storage line then says what).
 */
export function askToKeep(answered: () => void) {
  void navigator.storage
    ?.persisted?.()
    .then((kept) => kept || navigator.storage.persist())
    .then(answered, () => {});
}

/** The storage line: what the models take, what the site may use, and whether the browser keeps it. */
export async function showStorage(engine: HearthEngine | null, line: HTMLElement) {
  writeStorage(await engine?.models.usage().catch(() => null), line);
}

function writeStorage(usage: ModelStoreUsage | null | undefined, line: HTMLElement) {
  if (!usage) return;
  const free = freeStorage(usage);
  const site =
    free !== null
      ? ` · this site uses ${formatBytes(usage.used!)} of the ${formatBytes(usage.quota!)} the browser allows it ` +
        `(${formatBytes(free)} free)`
      : '';
  const kept =
    usage.persisted === true
      ? ' The browser keeps them even when the disk runs low.'
      : usage.persisted === false
        ? ' The browser may clear them when the disk runs low (they would be downloaded again).'
        : '';
  line.textContent = `Downloaded models: ${formatBytes(usage.models)}${site}.${kept}`;
}

/**
 * Draws the catalogue — the app's list and, on the test servers, their test entries (whose Hub is the test server) —
 * then asks the Hub for sizes, and this device for its facts and a speed probe.
 */
export async function showCatalogue(engine: HearthEngine, models: ModelsView, ui: FirstRunControls) {
  const extra = await fetch('/test-models/catalogue.json')
    .then(
      async (r) => {
        const body = r.ok ? await r.json() : null;
        localStorage.setItem(EXTRA_CATALOGUE, JSON.stringify(body));
        return body;
      },
      () => JSON.parse(localStorage.getItem(EXTRA_CATALOGUE) ?? 'null'), // offline: as it was last
    )
    .catch(() => null);
  const endpoint = typeof extra?.endpoint === 'string' ? (extra.endpoint as string) : undefined;
  const list: CatalogueModel[] = [...validEntries(extra), ...CATALOGUE].map((m) =>
    endpoint ? { ...m, hf: { ...m.hf, endpoint } } : m,
  );
  models.show(list, keptSizes());
  await models.refresh();
  ui.firstRun.hidden = models.storedModels().length > 0;
  models.askSizes();
  const usage = await engine.models.usage().catch(() => null);
  writeStorage(usage, ui.storageLine);
  const info = await engine.info();
  const facts = await deviceFacts(info, usage);
  models.setDevice(facts);
  const memory =
    facts.deviceMemoryGiB !== null ? ` · about ${facts.deviceMemoryGiB} GB of memory, as the browser says` : '';
  const probe = facts.probe ? ` · reads ${(facts.probe.bytesPerSecond / 1e9).toFixed(1)} GB/s (measured)` : '';
  const runs =
    facts.backend === 'webgpu'
      ? `the GPU (${info.gpu?.adapter ?? 'WebGPU'})`
      : `the CPU, ${info.threads} thread${info.threads > 1 ? 's' : ''}`;
  ui.deviceLine.textContent = `This device: models run on ${runs}${probe}${memory}.`;
}
