// The collection picker and what an owner does with collections: create, rename, drop.
import { call, path, OfflineError } from './api.js';
import * as replica from './replica.js';
import { say } from './dom.js';
import { showCollection } from './records.js';

const picker = document.querySelector('#collection');

// Fills the picker (keeping `wanted`, else the last one picked) and opens that collection.
// Offline, the picker lists the collections kept on this device.
export async function loadCollections(wanted = localStorage.getItem('collection')) {
  let collections;
  try {
    collections = (await call('GET', '/api/collections')).collections.map((c) => ({ name: c.name, label: `${c.name} (${c.role})` }));
    // What this device kept of collections gone since, or no longer readable, goes too.
    const current = new Set(collections.map((c) => c.name));
    replica.collections().then((kept) => Promise.all(kept.filter((c) => !current.has(c.name)).map((c) => replica.forget(c.name)))).catch(() => undefined);
  } catch (error) {
    if (!(error instanceof OfflineError)) throw error;
    collections = (await replica.collections()).map((c) => ({ name: c.name, label: `${c.name} (kept on this device)` }));
  }
  picker.replaceChildren(...collections.map((c) => new Option(c.label, c.name)));
  if (collections.some((c) => c.name === wanted)) picker.value = wanted;
  const chosen = picker.value || null;
  if (chosen) localStorage.setItem('collection', chosen);
  showCollection(chosen);
  for (const b of document.querySelectorAll('.needs-collection')) b.disabled = !chosen;
  if (collections.length === 0) say('No collections yet: create one with New collection.');
  return collections;
}

export async function createCollection(name) {
  try {
    await call('POST', '/api/collections', { name });
    say(`created ${name}`);
    await loadCollections(name);
  } catch (error) { say(refusal('creating a collection', error), true); }
}

export async function renameCollection(from, to) {
  try {
    await call('POST', path('collections', from, 'rename'), { to });
    say(`renamed ${from} to ${to}`);
    await loadCollections(to);
  } catch (error) { say(refusal('renaming a collection', error), true); }
}

export async function dropCollection(name) {
  if (!confirm(`Drop ${name} and every record in it, for everyone?`)) return;
  try {
    await call('DELETE', path('collections', name));
    say(`dropped ${name}`);
    localStorage.removeItem('collection');
    await loadCollections(null);
  } catch (error) { say(refusal('dropping a collection', error), true); }
}

// Collections are made, renamed and dropped by the server only: offline, that is refused with
// a message (records, unlike these, can be edited offline).
function refusal(what, error) {
  return error instanceof OfflineError ? `${what} needs the server, which cannot be reached; records can still be edited here` : error.message;
}
