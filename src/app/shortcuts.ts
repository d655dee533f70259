// The app's keyboard shortcuts: Esc stops the answer; Ctrl+Shift+O (⌘⇧O) starts a chat; Ctrl+K (⌘K) searches titles;
// "/" outside a text field goes to the message box. Enter and Shift+Enter belong to the message box (sendOnEnter).
// The buttons say theirs in aria-keyshortcuts (index.html), the settings in words.

export interface ShortcutActions {
  /** Stops the answer being written; false when none is. */
  stop(): boolean;
  newChat(): void;
  search(): void;
  /** Goes to the message box; false when it cannot take text now. */
  compose(): boolean;
}

export function bindShortcuts(target: Document, actions: ShortcutActions) {
  target.addEventListener('keydown', (e) => {
    const mod = e.ctrlKey || e.metaKey;
    const typing = e.target instanceof HTMLElement && /^(INPUT|TEXTAREA|SELECT)$/.test(e.target.tagName);
    const key = e.key.toLowerCase();
    let done = false;
    if (e.key === 'Escape') done = actions.stop();
    else if (mod && e.shiftKey && key === 'o') {
      actions.newChat();
      done = true;
    } else if (mod && !e.shiftKey && key === 'k') {
      actions.search();
      done = true;
    } else if (e.key === '/' && !mod && !typing) done = actions.compose();
    if (done) e.preventDefault();
  });
}
