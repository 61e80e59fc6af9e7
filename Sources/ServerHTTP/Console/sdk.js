// PlistSync's script client, served as /sdk/plistsync.js (Protocol/HTTP.md, "The script
// client"): the module the console itself is built on, for another page of the same origin.
// It opens a collection, reads it in order, tells each change, and edits it with or without a
// server: edits wait on the device (IndexedDB) and are sent, in order and merged by the agent's
// rules, when the server answers.
//
//   import { login, openCollection, fields } from '/sdk/plistsync.js';
//   await login('alice', 'secret');
//   const contacts = await openCollection('contacts');
//   contacts.addEventListener('change', () => console.log(contacts.records().map((r) => r.id)));
//   contacts.put('Ada', fields('{"name":"Ada","phone":"555-0100"}'));
import { call } from '../api.js';
import { parseTyped, plain } from '../values.js';
import { SyncedCollection } from '../synced.js';
import { forgetAll } from '../replica.js';

export { SyncedCollection };
export { reachability, APIError, OfflineError } from '../api.js';
export { parseTyped, encodeTyped, plain } from '../values.js';
export { mergeRecord, mergeFields, orderMoves } from '../merge.js';

// Logs in with a session cookie (as the console does): the person, as `GET /api/me` tells.
export async function login(user, password) {
  await call('POST', '/api/login', { user, password });
  return call('GET', '/api/me');
}

// Ends the session; what the device kept (the copies and the waiting edits) goes too.
export async function logout() {
  await call('POST', '/api/logout');
  await forgetAll();
}

// The collections this person may read: [{name, role}].
export async function collections() {
  return (await call('GET', '/api/collections')).collections;
}

// A collection as the device holds it, shown from its copy at once and followed live.
export async function openCollection(name) {
  const collection = new SyncedCollection(name);
  await collection.open();
  return collection;
}

// A record's fields (a Map of typed values) from the wire's JSON text, and back to plain values.
export function fields(json) {
  return parseTyped(json).entries;
}

export function plainFields(map) {
  return Object.fromEntries([...map].map(([name, value]) => [name, plain(value)]));
}
