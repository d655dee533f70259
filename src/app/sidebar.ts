// The app's conversation list: every conversation kept in IndexedDB, newest first, filtered by title; open, rename
// (in place) and delete. Titles are text the user or the model wrote: set through textContent only.
import { conversations, type SavedConversation, WIDGET_ID_PREFIX } from '../ui/conversation.ts';

export interface SidebarActions {
  open(c: SavedConversation): void;
  deleted(id: string): void;
}

export class Sidebar {
  constructor(
    private readonly list: HTMLUListElement,
    private readonly search: HTMLInputElement,
    private readonly actions: SidebarActions,
    private current = '',
  ) {
    search.addEventListener('input', () => void this.refresh());
  }

  private asked = 0;

  /** Redraws the list, marking `current` as the open conversation. */
  async refresh(current = this.current) {
    this.current = current;
    const query = this.search.value.trim().toLowerCase();
    const asked = ++this.asked;
    const all = await conversations.list().catch(() => []);
    // Only the newest redraw draws: an older one's list may be from before a delete or a rename.
    if (asked !== this.asked) return;
    // A widget on the same site keeps its own conversation in the same store; it is not one of the app's.
    const shown = all.filter(
      (c) =>
        c.messages.length && !c.id.startsWith(WIDGET_ID_PREFIX) && (!query || c.title.toLowerCase().includes(query)),
    );
    this.list.replaceChildren(...shown.map((c) => this.item(c)));
  }

  private item(c: SavedConversation): HTMLLIElement {
    const li = document.createElement('li');
    li.classList.toggle('current', c.id === this.current);
    const title = button('title', c.title || 'Untitled', () => this.actions.open(c));
    const rename = button('rename', 'Rename', () => {
      const input = Object.assign(document.createElement('input'), { value: c.title, className: 'rename-input' });
      input.setAttribute('aria-label', 'New title');
      const done = async (keep: boolean) => {
        if (keep && input.value.trim()) {
          c.title = input.value.trim();
          await conversations.put(c);
        }
        await this.refresh();
      };
      input.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') void done(true);
        if (e.key === 'Escape') void done(false);
      });
      input.addEventListener('blur', () => void done(true));
      title.replaceWith(input);
      input.focus();
    });
    const remove = button('delete', 'Delete', async () => {
      await conversations.delete(c.id);
      this.actions.deleted(c.id);
      await this.refresh();
    });
    li.append(title, rename, remove);
    return li;
  }
}

function button(className: string, text: string, onClick: () => void): HTMLButtonElement {
  const b = Object.assign(document.createElement('button'), { type: 'button', className, textContent: text });
  b.addEventListener('click', onClick);
  return b;
}
