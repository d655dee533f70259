/** Conversation records in Hearth's IndexedDB KV store; runs in the page (page.evaluate(savedConversations)). */
export function savedConversations(): Promise<number> {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open('hearth-kv');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      if (!db.objectStoreNames.contains('records')) return resolve(0);
      const req = db.transaction('records').objectStore('records').getAllKeys();
      req.onsuccess = () => resolve(req.result.filter((k) => String(k).startsWith('m:conversation')).length);
      req.onerror = () => reject(req.error);
    };
  });
}
