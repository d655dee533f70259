// One object store of an IndexedDB database, for idb-keyval's calls (get, set, transactions), that another context
// may delete or clear under it. idb-keyval's own store keeps its connection open whatever happens, so another tab's
// indexedDB.deleteDatabase waits until this one closes (the tab, or the engine's worker): "clear this site's data"
// would never finish while Hearth runs. This one closes its connection when asked to ('versionchange'), or when the
// browser closes it (site data cleared), tells `onGone`, and opens the database again at the next call — created empty
// when it was deleted.
import { promisifyRequest, type UseStore } from 'idb-keyval';

export function yieldingStore(dbName: string, storeName: string, onGone?: () => void): UseStore {
  let db: Promise<IDBDatabase> | null = null;
  const connect = async (version?: number): Promise<IDBDatabase> => {
    const request = indexedDB.open(dbName, version);
    request.onupgradeneeded = () => {
      if (!request.result.objectStoreNames.contains(storeName)) request.result.createObjectStore(storeName);
    };
    const conn = await promisifyRequest(request);
    if (conn.objectStoreNames.contains(storeName)) return conn;
    // Created again by other code without our store (an empty database where ours was deleted): add it.
    conn.close();
    return connect(conn.version + 1);
  };
  const open = () => {
    const opened = connect().then((conn) => {
      const gone = () => {
        conn.close();
        if (db !== opened) return;
        db = null;
        onGone?.();
      };
      conn.onversionchange = gone;
      conn.onclose = gone;
      return conn;
    });
    opened.catch(() => {
      if (db === opened) db = null; // blocked or refused: the next call tries again
    });
    db = opened;
    return opened;
  };
  return (mode, callback) =>
    (db ?? open()).then((conn) => callback(conn.transaction(storeName, mode).objectStore(storeName)));
}
