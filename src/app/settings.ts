// The settings panel (index.html's #settings): the system prompt and its presets, the temperature, what happens when
// the context is full, the fallback server; the models in the model store, each with Delete. And what the app keeps
// across visits in localStorage: the open conversation, the model choice and these settings.
import { formatBytes } from '../core/bytes.ts';
import type { HearthEngine } from '../index.ts';
import { SYSTEM_PRESETS } from './presets.ts';

export interface SettingsControls {
  kind: HTMLSelectElement;
  testOption: HTMLOptionElement;
  hfRepo: HTMLInputElement;
  hfFile: HTMLInputElement;
  url: HTMLInputElement;
  projectorUrl: HTMLInputElement;
  system: HTMLTextAreaElement;
  temperature: HTMLInputElement;
  overflow: HTMLSelectElement;
  fallbackUrl: HTMLInputElement;
  fallbackModel: HTMLInputElement;
  preset: HTMLSelectElement;
}

const SAVED = 'hearth-demo';

/** Keeps the open conversation, the model choice (not a local file: it cannot be reopened) and the settings. */
export function saveSettings(ui: SettingsControls, conversationId: string) {
  const model = {
    kind: ui.kind.value,
    hfRepo: ui.hfRepo.value,
    hfFile: ui.hfFile.value,
    url: ui.url.value,
    projector: ui.projectorUrl.value,
  };
  const settings = {
    system: ui.system.value,
    temperature: ui.temperature.value,
    overflow: ui.overflow.value,
    fallbackUrl: ui.fallbackUrl.value,
    fallbackModel: ui.fallbackModel.value,
  };
  try {
    localStorage.setItem(SAVED, JSON.stringify({ conversationId, model, settings }));
  } catch {
    // storage full or disabled: the chat still works, it just is not kept
  }
}

/** Puts back the model choice and the settings kept; returns what was kept (its conversation, to reopen), or null
 * when nothing kept could be read. */
export function restoreSettings(ui: SettingsControls): { conversationId?: string } | null {
  let saved: { conversationId?: string; model?: Record<string, string>; settings?: Record<string, string> } = {};
  try {
    saved = JSON.parse(localStorage.getItem(SAVED) ?? '{}');
  } catch {
    return null;
  }
  const model = saved.model ?? {};
  if (model.kind === 'test') ui.testOption.hidden = false; // offered before: it is in the model store, even offline
  if (model.kind && model.kind !== 'file' && [...ui.kind.options].some((o) => o.value === model.kind && !o.hidden)) {
    ui.kind.value = model.kind;
  }
  if (model.hfRepo) ui.hfRepo.value = model.hfRepo;
  if (model.hfFile) ui.hfFile.value = model.hfFile;
  if (model.url) ui.url.value = model.url;
  if (model.projector) ui.projectorUrl.value = model.projector;
  const settings = saved.settings ?? {};
  if (settings.system !== undefined) ui.system.value = settings.system;
  showPreset(ui);
  if (settings.temperature) ui.temperature.value = settings.temperature;
  if (settings.overflow) ui.overflow.value = settings.overflow;
  if (settings.fallbackUrl) ui.fallbackUrl.value = settings.fallbackUrl;
  if (settings.fallbackModel) ui.fallbackModel.value = settings.fallbackModel;
  return saved;
}

/** Wires the settings: a change is kept (`save`); a preset fills the system prompt. */
export function bindSettings(ui: SettingsControls, save: () => void) {
  for (const el of [ui.system, ui.temperature, ui.overflow]) el.addEventListener('change', save);
  ui.preset.append(...SYSTEM_PRESETS.map((p) => new Option(p.name, p.text)));
  ui.preset.addEventListener('change', () => {
    if (!ui.preset.value) return;
    ui.system.value = ui.preset.value;
    save();
  });
  ui.system.addEventListener('input', () => showPreset(ui));
}

/** The preset menu shows the preset the system prompt is, or "your own". */
function showPreset(ui: SettingsControls) {
  ui.preset.value = SYSTEM_PRESETS.some((p) => p.text === ui.system.value) ? ui.system.value : '';
}

/** The fallback server in the settings, or null when its URL is empty (the default: nothing leaves the browser). */
export function fallback(ui: SettingsControls) {
  const baseURL = ui.fallbackUrl.value.trim();
  return baseURL ? { remote: { baseURL, model: ui.fallbackModel.value.trim() || 'default' } } : null;
}

/** The models in the model store, each with a Delete button (the space they take goes back to the visitor). */
export async function showStoredModels(list: HTMLUListElement, engine: () => HearthEngine | null) {
  const current = engine();
  const models = current ? await current.models.list().catch(() => []) : [];
  list.replaceChildren(
    ...models.map((m) => {
      const li = document.createElement('li');
      const remove = Object.assign(document.createElement('button'), {
        type: 'button',
        className: 'delete-model',
        textContent: 'Delete',
      });
      remove.addEventListener('click', async () => {
        remove.disabled = true;
        await engine()
          ?.models.delete(m.id)
          .catch(() => false);
        await showStoredModels(list, engine);
      });
      const size = `${formatBytes(m.size ?? m.downloaded)}${m.complete ? '' : ' (incomplete)'}`;
      li.append(
        Object.assign(document.createElement('span'), { className: 'model-name', textContent: `${m.name} · ${size}` }),
        remove,
      );
      return li;
    }),
  );
  if (!models.length) {
    list.append(Object.assign(document.createElement('li'), { className: 'muted', textContent: 'none' }));
  }
}
