// Export and import as the app's sidebar offers them (app/transfer.ts does the work): Export all, Export as Markdown,
// Import…, and a status line that says what happened.
import { conversations, type SavedConversation, WIDGET_ID_PREFIX } from '../ui/conversation.ts';
import { exportJson, exportMarkdown, importJson } from './transfer.ts';

export interface TransferControls {
  exportJson: HTMLButtonElement;
  exportMd: HTMLButtonElement;
  importButton: HTMLButtonElement;
  importFile: HTMLInputElement;
  status: HTMLElement;
}

/** Wires the controls: `current` is the open conversation, `imported` runs after an import (the list redraws). */
export function bindTransfer(ui: TransferControls, current: () => SavedConversation, imported: () => Promise<void>) {
  ui.exportJson.addEventListener('click', async () => {
    const list = (await conversations.list()).filter((c) => c.messages.length && !c.id.startsWith(WIDGET_ID_PREFIX));
    download(await exportJson(list), `hearth-conversations-${new Date().toISOString().slice(0, 10)}.json`);
    ui.status.textContent = `Exported ${list.length} conversation${list.length === 1 ? '' : 's'}.`;
  });
  ui.exportMd.addEventListener('click', () => {
    const c = current();
    if (!c.messages.length) return void (ui.status.textContent = 'This conversation is empty.');
    download(new Blob([exportMarkdown(c)], { type: 'text/markdown' }), `${fileTitle(c.title)}.md`);
  });
  ui.importButton.addEventListener('click', () => ui.importFile.click());
  ui.importFile.addEventListener('change', async () => {
    const file = ui.importFile.files?.[0];
    ui.importFile.value = '';
    if (!file) return;
    try {
      const r = await importJson(file);
      const parts = [`Imported ${r.added} conversation${r.added === 1 ? '' : 's'}`];
      if (r.same) parts.push(`${r.same} already here`);
      if (r.refused.length) parts.push(`${r.refused.length} left out (${r.refused.join('; ')})`);
      ui.status.textContent = `${parts.join(', ')}.`;
    } catch (err) {
      ui.status.textContent = `Could not import ${file.name}: ${(err as Error).message}.`;
    }
    await imported();
  });
}

/** Offers `blob` as a file download (nothing leaves the browser). */
function download(blob: Blob, name: string) {
  const url = URL.createObjectURL(blob);
  Object.assign(document.createElement('a'), { href: url, download: name }).click();
  // Revoked later, not at once: the browser reads the file after the click returns.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** A title as a file name: letters, digits, spaces, dashes and underscores. */
const fileTitle = (title: string) =>
  title
    .replace(/[^\p{L}\p{N} _-]+/gu, '')
    .trim()
    .slice(0, 60) || 'conversation';
