// The device's copy of the collections a person opened, in IndexedDB: each record's latest
// state and the seq the copy is current to, written in one transaction so the two always agree.
// The console shows a collection from it at once (with no network too) and its event stream
// resumes after that seq (`?since=`), so nothing is missed or repeated. Beside it, the outbox:
// the edits made here that the server has not taken yet (outbox.js), which survive a reload, a
// closed tab and a restarted browser. Logging out forgets both.
const NAME = 'plistsync';
let opening = null;

function database() {
  opening ??= new Promise((resolve, reject) => {
    const request = indexedDB.open(NAME, 2);
    request.onupgradeneeded = (e) => {
      const db = request.result;
      if (e.oldVersion < 1) {
        db.createObjectStore('records', { keyPath: ['collection', 'id'] }).createIndex('collection', 'collection');
        db.createObjectStore('collections', { keyPath: 'name' });
      }
      if (e.oldVersion < 2) db.createObjectStore('outbox', { keyPath: ['collection', 'id'] }).createIndex('collection', 'collection');
    };
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  return opening;
}

function done(transaction) {
  return new Promise((resolve, reject) => {
    transaction.oncomplete = () => resolve();
    transaction.onerror = () => reject(transaction.error);
    transaction.onabort = () => reject(transaction.error);
  });
}

function all(request) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

// The copy of `collection`: {seq, records: [{id, rev, position, fields (typed JSON text)}]}
// (seq 0 and no records when there is none).
export async function load(collection) {
  const db = await database();
  const transaction = db.transaction(['records', 'collections'], 'readonly');
  const [records, info] = await Promise.all([
    all(transaction.objectStore('records').index('collection').getAll(collection)),
    all(transaction.objectStore('collections').get(collection)),
  ]);
  return { seq: info?.seq ?? 0, records };
}

// The collections held here: [{name, seq}].
export async function collections() {
  const db = await database();
  return all(db.transaction('collections', 'readonly').objectStore('collections').getAll());
}

// Changes of `collection` up to `seq`, each {id, rev, position, fields} or {id, deleted: true},
// saved with the seq in one transaction.
export async function remember(collection, changes, seq) {
  const db = await database();
  const transaction = db.transaction(['records', 'collections'], 'readwrite');
  const records = transaction.objectStore('records');
  for (const change of changes) {
    if (change.deleted) records.delete([collection, change.id]);
    else records.put({ collection, id: change.id, rev: change.rev, position: change.position, fields: change.fields });
  }
  transaction.objectStore('collections').put({ name: collection, seq });
  return done(transaction);
}

// The outbox's entries of `collection` (outbox.js says what they hold).
export async function pending(collection) {
  const db = await database();
  return all(db.transaction('outbox', 'readonly').objectStore('outbox').index('collection').getAll(collection));
}

// Saves an outbox entry (one a record, keyed by collection and id), replacing the one before.
export async function queue(entry) {
  const db = await database();
  const transaction = db.transaction('outbox', 'readwrite');
  transaction.objectStore('outbox').put(entry);
  return done(transaction);
}

// Removes an outbox entry the server took.
export async function settle(collection, id) {
  const db = await database();
  const transaction = db.transaction('outbox', 'readwrite');
  transaction.objectStore('outbox').delete([collection, id]);
  return done(transaction);
}

// Forgets one collection's copy (its changes expired on the server: it is read again from 0;
// the outbox stays, its entries carry their own bases). With `outbox` its unsent edits go too
// (the collection was dropped, or may no longer be written).
export async function forget(collection, { outbox = false } = {}) {
  const db = await database();
  const transaction = db.transaction(['records', 'collections', 'outbox'], 'readwrite');
  const range = IDBKeyRange.bound([collection], [collection, []]);
  transaction.objectStore('records').delete(range);
  transaction.objectStore('collections').delete(collection);
  if (outbox) transaction.objectStore('outbox').delete(range);
  return done(transaction);
}

// How many edits made here wait for the server, in every collection.
export async function pendingCount() {
  const db = await database();
  return all(db.transaction('outbox', 'readonly').objectStore('outbox').count());
}

// Forgets everything (logging out: the next person on this browser sees nothing of it).
export async function forgetAll() {
  const db = await database();
  const transaction = db.transaction(['records', 'collections', 'outbox'], 'readwrite');
  for (const store of ['records', 'collections', 'outbox']) transaction.objectStore(store).clear();
  return done(transaction);
}
