// The edits made on this device that the server has not taken yet, kept in IndexedDB beside the
// replica (so they survive a reload, a closed tab, a restarted browser) and sent in the order
// they were made once the server answers. One entry a record holds the state wanted and the
// state it was made on (`base`: the rev and fields the device had; null when the record was
// made here); later edits of the same record fold into it. One entry holds the order wanted and
// the order it was made on. A stale write is merged by the agent's rules (merge.js): fields
// changed on one side merge, a field changed on both keeps the server's value and this device's
// version is filed as a conflict copy in `<c>~conflicts`, an edit beats a delete, and a row
// someone else moved stays where they put it.
import { callTyped, path, OfflineError } from './api.js';
import { parseTyped, encodeTyped, plain, member } from './values.js';
import { mergeRecord, orderMoves } from './merge.js';
import * as replica from './replica.js';

// The order entry's key: no record id is empty.
const ORDER = '';
let lastQueued = 0;

function queuedNow() {
  lastQueued = Math.max(Date.now(), lastQueued + 1);
  return lastQueued;
}

// An answer that says "not now" rather than "no": the session ended (401: the edits wait for
// the next login), the server is busy or shutting down (5xx), too many requests (429), idle
// (408). The flush stops there and what waits stays, as when the server cannot be reached.
class NotNow extends Error {
  constructor(response) {
    super(response.json?.message || `HTTP ${response.status}`);
    this.status = response.status;
  }
}

function checked(response) {
  const { status } = response;
  if (status === 401 || status === 408 || status === 429 || status >= 500) throw new NotNow(response);
  return response;
}

const encode = (fields) => (fields ? encodeTyped({ type: 'dict', entries: fields }) : null);
const decode = (text) => (text === null ? null : parseTyped(text).entries);

// `<id>.sync-conflict-<YYYYMMDD-HHMMSS>-<device>`, as the agent names its copies.
export function conflictCopyID(id, device, date = new Date()) {
  const stamp = date.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${id}.sync-conflict-${stamp}-${device}`;
}

// This browser's name in conflict copies: made once, kept.
export function deviceName() {
  let name = localStorage.getItem('device');
  if (!name) {
    name = 'browser-' + Array.from(crypto.getRandomValues(new Uint8Array(3)), (b) => b.toString(16).padStart(2, '0')).join('');
    localStorage.setItem('device', name);
  }
  return name;
}

// Events: `change` (detail: {id}; the order entry's id is ''), `conflict` (detail: {id, copy}:
// this device's version was filed as `copy`), `refused` (detail: {id, message}: the server will
// not take the edit, as for a member who may only read), `waiting` (detail: {message}: the
// server said not now, a session that ended say; the edits stay and are tried again).
export class Outbox extends EventTarget {
  // Requests in flight at once: a browser opens at most six connections to a server, and the
  // event stream holds one.
  static window = 5;
  static busyRetry = 2000;

  // `server` answers what the device knows of the server's state: record(id) ->
  // {rev, position, fields} or undefined, order() -> ids, and acknowledge(id, {rev, fields})
  // for a write the server took.
  constructor(collection, server) {
    super();
    this.collection = collection;
    this.server = server;
    this.entries = new Map();
    this.flushing = false;
    this.again = false;
    this.closed = false;
  }

  async load() {
    for (const stored of await replica.pending(this.collection)) {
      const entry = stored.id === ORDER
        ? { ...stored, version: 0 }
        : { ...stored, fields: decode(stored.fields), base: stored.base && { rev: stored.base.rev, fields: decode(stored.base.fields) }, version: 0 };
      this.entries.set(stored.id, entry);
    }
  }

  get size() { return this.entries.size; }

  // The fields this device wants for `id` (null: deleted here), or undefined when none wait.
  wanted(id) { return this.entries.get(id)?.fields; }

  // How many times the entry of `id` changed here (0 when loaded): a new one draws its row anew.
  version(id) { return this.entries.get(id)?.version ?? 0; }

  // The order this device wants and the order it was made on ({base, desired}), or null when
  // none waits.
  wantedOrder() {
    const entry = this.entries.get(ORDER);
    return entry ? { base: entry.base, desired: entry.desired } : null;
  }

  // Records made, edited or deleted here and not yet taken.
  pendingIDs() { return [...this.entries.keys()].filter((id) => id !== ORDER); }

  // Queues the record's new fields (null: delete it), made on `base` ({rev, fields}; null for a
  // record made here; by default what the device has of the server's record). Resolves once
  // the edit is kept on the device (a tab closed before then may lose it).
  edit(id, fields, base) {
    const existing = this.entries.get(id);
    if (existing) {
      if (!existing.sending && existing.base === null && fields === null) {
        // Made and deleted here before the server saw it: nothing to send.
        this.entries.delete(id);
        return this.changed(id, replica.settle(this.collection, id));
      }
      existing.fields = fields;
      existing.version++;
      return this.changed(id, this.save(existing));
    }
    const known = this.server.record(id);
    if (base === undefined) base = known ? { rev: known.rev, fields: known.fields } : null;
    const entry = { collection: this.collection, id, kind: 'record', fields, base, queued: queuedNow(), version: 1 };
    this.entries.set(id, entry);
    return this.changed(id, this.save(entry));
  }

  // Queues an order: `desired` ids, made from the order shown.
  reorder(desired) {
    const existing = this.entries.get(ORDER);
    if (existing) {
      existing.desired = desired;
      existing.version++;
      return this.changed(ORDER, this.save(existing));
    }
    const entry = { collection: this.collection, id: ORDER, kind: 'order', base: this.server.order(), desired, queued: queuedNow(), version: 1 };
    this.entries.set(ORDER, entry);
    return this.changed(ORDER, this.save(entry));
  }

  save(entry) {
    const stored = entry.kind === 'order'
      ? { collection: entry.collection, id: ORDER, kind: 'order', base: entry.base, desired: entry.desired, queued: entry.queued }
      : { collection: entry.collection, id: entry.id, kind: 'record', fields: encode(entry.fields), base: entry.base && { rev: entry.base.rev, fields: encode(entry.base.fields) }, queued: entry.queued };
    return replica.queue(stored);
  }

  // Sends every entry, oldest first; stops quietly when the server cannot be reached (the
  // entries wait for the next call). Edits of different records go up a few at a time (each is
  // a durable commit: one after the other, each waits for its own; side by side the server
  // commits them together); an order waits for every edit before it, and those after wait for it.
  async flush() {
    if (this.flushing) { this.again = true; return; }
    this.flushing = true;
    try {
      do {
        this.again = false;
        await this.sendAll([...this.entries.values()].sort((a, b) => a.queued - b.queued));
      } while (this.again && !this.closed);
    } catch (error) {
      if (error instanceof NotNow) {
        this.emit('waiting', { message: error.message, status: error.status });
        // A busy server is asked again shortly; a session that ended waits for a login.
        if (error.status !== 401 && !this.closed) setTimeout(() => this.flush(), Outbox.busyRetry);
      } else if (!(error instanceof OfflineError)) {
        throw error;
      }
    } finally {
      this.flushing = false;
    }
  }

  async sendAll(entries) {
    const flying = new Set();
    let failure = null;
    const settle = async () => {
      await Promise.all(flying);
      if (failure) throw failure;
    };
    for (const entry of entries) {
      if (this.closed || failure) break;
      if (entry.kind === 'order') await settle();
      const sending = this.sendOne(entry).catch((error) => { failure ??= error; });
      flying.add(sending);
      sending.then(() => flying.delete(sending));
      if (entry.kind === 'order') await settle();
      else if (flying.size >= Outbox.window) await Promise.race(flying);
    }
    await settle();
  }

  async sendOne(entry) {
    entry.sending = true;
    try {
      if (entry.kind === 'order') await this.sendOrder(entry); else await this.sendRecord(entry);
    } finally { entry.sending = false; }
  }

  async sendRecord(entry) {
    const version = entry.version;
    let { base } = entry;
    let mine = entry.fields;
    for (let attempt = 0; attempt < 8; attempt++) {
      if (mine === null && !base) return this.settled(entry, version, null);
      const response = mine === null ? await this.request('DELETE', entry.id, undefined, base.rev) : await this.request('PUT', entry.id, encode(mine), base?.rev);
      if (response.ok) return this.settled(entry, version, { rev: plain(member(response.value, 'rev')), fields: mine });
      if (response.status === 404) {
        // Gone altogether (its tombstone too): a delete is done, an edit makes it anew.
        if (mine === null) return this.settled(entry, version, null);
        base = null;
        continue;
      }
      if (response.status !== 409 || !member(response.value, 'current')) {
        this.emit('refused', { id: entry.id, message: response.json?.message || `HTTP ${response.status}` });
        return this.settled(entry, version, null);
      }
      const current = member(response.value, 'current');
      const rev = plain(member(current, 'rev'));
      const theirs = plain(member(current, 'deleted')) ? null : member(current, 'fields').entries;
      const merged = mergeRecord(base ? base.fields : undefined, mine, theirs);
      if (merged.conflictCopy) await this.fileConflictCopy(entry.id, merged.conflictCopy);
      if (!merged.push) return this.settled(entry, version, { rev, fields: theirs });
      base = { rev, fields: theirs };
      mine = merged.result;
    }
    // Not dropped: it stays for the next flush.
    this.emit('waiting', { message: `${entry.id} kept changing on the server; the edit waits` });
  }

  request(method, id, body, rev) {
    const headers = rev ? { 'If-Match': `"${rev}"` } : { 'If-None-Match': '*' };
    return callTyped(method, path('collections', this.collection, 'records', id), body, headers).then(checked);
  }

  // This device's version of `id` beside the record, in `<c>~conflicts`, for anyone to resolve.
  async fileConflictCopy(id, fields) {
    const base = conflictCopyID(id, deviceName());
    for (let n = 0; n < 20; n++) {
      const copy = n ? `${base}-${n}` : base;
      const response = checked(await callTyped('PUT', path('collections', `${this.collection}~conflicts`, 'records', copy), encode(fields), { 'If-None-Match': '*' }));
      if (response.ok) { this.emit('conflict', { id, copy }); return; }
      if (response.status !== 409) {
        this.emit('refused', { id, message: response.json?.message || `could not file a conflict copy of ${id}` });
        return;
      }
    }
  }

  async sendOrder(entry) {
    const version = entry.version;
    for (const move of orderMoves(entry.base, entry.desired, this.server.order())) {
      const known = this.server.record(move.id);
      if (!known) continue;
      let { rev } = known;
      const body = move.anchor === undefined ? { to: move.to } : { to: move.to, anchor: move.anchor };
      for (let attempt = 0; attempt < 3; attempt++) {
        const response = checked(await callTyped('POST', path('collections', this.collection, 'records', move.id, 'move'), body, { 'If-Match': `"${rev}"` }));
        if (response.status !== 409) break;
        // Changed meanwhile: moved by someone (their place stands) or edited (the move goes on).
        const current = member(response.value, 'current');
        if (!current || plain(member(current, 'deleted')) || plain(member(current, 'position')) !== known.position) break;
        rev = plain(member(current, 'rev'));
      }
    }
    this.settled(entry, version, null);
  }

  // The server took (or settled) what `entry` held at `version`: it leaves the outbox, unless
  // it was edited meanwhile, when the newer edit stays, now based on what the server has.
  settled(entry, version, state) {
    if (state && entry.kind === 'record') this.server.acknowledge(entry.id, state);
    if (entry.version !== version) {
      if (state && entry.kind === 'record') entry.base = { rev: state.rev, fields: state.fields };
      if (entry.kind === 'order') entry.base = this.server.order();
      this.changed(entry.id, this.save(entry));
      return;
    }
    this.entries.delete(entry.id);
    this.changed(entry.id, replica.settle(this.collection, entry.id));
  }

  emit(kind, detail) { this.dispatchEvent(new CustomEvent(kind, { detail })); }

  // Tells of a change to `id`'s entry; resolves when `saving` (its write to IndexedDB) ends.
  changed(id, saving) {
    this.emit('change', { id });
    return saving.catch(() => undefined);
  }
}
