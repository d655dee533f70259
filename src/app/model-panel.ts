// The "Another model" form (index.html's #model-panel): the kind of source (the generated test model, Hugging Face, a
// URL, local files), the fields shown for that kind, and the model and projector the form names.
import type { LoadOptions, ModelSource } from '../index.ts';

export interface ModelPanelControls {
  kind: HTMLSelectElement;
  hfRepo: HTMLInputElement;
  hfFile: HTMLInputElement;
  url: HTMLInputElement;
  file: HTMLInputElement;
  projectorUrl: HTMLInputElement;
  projectorFile: HTMLInputElement;
}

/** The generated test model the dev and preview servers serve. */
export const TEST_MODEL = '/test-models/qwen2-hello.gguf';

/** Shows the fields of the chosen kind of source. */
export function showKind(ui: Pick<ModelPanelControls, 'kind'>) {
  for (const el of document.querySelectorAll<HTMLElement>('[data-kind]')) {
    el.hidden = !el.dataset.kind!.split(' ').includes(ui.kind.value);
  }
}

export function chosenSource(ui: ModelPanelControls): ModelSource | null {
  switch (ui.kind.value) {
    case 'test':
      return TEST_MODEL;
    case 'hf':
      return { hf: { repo: ui.hfRepo.value.trim(), file: ui.hfFile.value.trim() } };
    case 'url':
      return ui.url.value.trim() || null;
    default: {
      // A split model: every part, picked together (the input takes several files).
      const files = [...(ui.file.files ?? [])];
      return files.length > 1 ? files : (files[0] ?? null);
    }
  }
}

/** The model's projector (an mmproj GGUF), so that it reads images or audio: a URL, or for a Hugging Face model a
 * file in its repo; a local file beside a local model. None for the test model. */
export function chosenProjector(ui: ModelPanelControls): LoadOptions['projector'] {
  if (ui.kind.value === 'file') return ui.projectorFile.files?.[0];
  const value = ui.projectorUrl.value.trim();
  if (!value || ui.kind.value === 'test') return undefined;
  return ui.kind.value === 'hf' && !/[:/]/.test(value) ? { hf: { repo: ui.hfRepo.value.trim(), file: value } } : value;
}
