/** Conversation records in Hearth's IndexedDB KV store; runs in the page (page.evaluate(savedConversations)). */
export function savedConversations(): Promise<number> {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open('hearth-kv');
    // No database: none is created here (and the connection is closed after), so the engine's stays as it made it.
    open.onupgradeneeded = () => open.transaction!.abort();
    open.onerror = () => (open.error?.name === 'AbortError' ? resolve(0) : reject(open.error));
    open.onsuccess = () => {
      const db = open.result;
      if (!db.objectStoreNames.contains('records')) {
        db.close();
        return resolve(0);
      }
      const req = db.transaction('records').objectStore('records').getAllKeys();
      req.onsuccess = () => {
        db.close();
        resolve(req.result.filter((k) => String(k).startsWith('m:conversation')).length);
      };
      req.onerror = () => reject(req.error);
    };
  });
}

/**
 * Puts conversation records into the app's and the widget's store ('hearth-chat'), as they keep them; runs in the page
 * (tab.evaluate(putConversations, records)). An image part whose url is 'png:<base64>' is stored as that PNG, a Blob.
 */
export function putConversations(records: Array<Record<string, unknown>>): Promise<void> {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open('hearth-chat');
    open.onupgradeneeded = () => open.result.createObjectStore('conversations');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const tx = open.result.transaction('conversations', 'readwrite');
      const blob = (url: string) =>
        new Blob([Uint8Array.from(atob(url.slice(4)), (c) => c.charCodeAt(0))], { type: 'image/png' });
      for (const r of records) {
        const messages = (r.messages as Array<{ content: unknown }>).map((m) =>
          Array.isArray(m.content)
            ? {
                ...m,
                content: m.content.map((p: { type: string; image_url?: { url: string } }) =>
                  p.type === 'image_url' && p.image_url?.url.startsWith('png:')
                    ? { type: 'image_url', image_url: { url: blob(p.image_url.url) } }
                    : p,
                ),
              }
            : m,
        );
        tx.objectStore('conversations').put({ start: 0, tokens: null, ...r, messages }, r.id as string);
      }
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
    };
  });
}
