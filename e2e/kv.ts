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
