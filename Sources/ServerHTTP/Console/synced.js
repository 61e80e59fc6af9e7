// One collection as a device holds it: the server's records (kept in the replica, brought up to
// date by the collection's event stream from the seq the replica is current to), the edits made
// here that wait in the outbox, and the two together as the device shows them. It works the same
// with and without a server: edits go to the outbox and are sent, in order and merged by the
// agent's rules, whenever the server answers. The console's records view is built on it, and
// it is the heart of the script client (/sdk/plistsync.js).
//
// Events: `change` (detail: {id, flash}; id undefined when many changed), `live` (detail:
// true when the stream is caught up, false when it dropped), `gone` (detail: {kind, to}: the
// collection was `revoked`, `dropped` or `renamed` to `to`), and the outbox's `conflict`,
// `refused` and `waiting`.
import { path, probe, reachability } from './api.js';
import { parseTyped, encodeTyped, plain, member } from './values.js';
import * as replica from './replica.js';
import { Outbox } from './outbox.js';
import { applyMoves, orderMoves } from './merge.js';

function byOrder(a, b) {
  if (a.position !== b.position) return a.position < b.position ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

export class SyncedCollection extends EventTarget {
  // Milliseconds before opening a dropped stream again: quick at first (a server restarting is
  // back within a second or two, and what waits here should go up at once), slower the longer
  // the server stays away (a phone in a tunnel need not try four times a second).
  static reconnectDelay(offlineFor) {
    return offlineFor < 30_000 ? 250 : offlineFor < 120_000 ? 1000 : 5000;
  }

  constructor(name) {
    super();
    this.name = name;
    this.server = new Map();  // id -> {id, rev, position, fields: Map}, as the server has it
    this.seq = 0;             // what `server` is current to
    this.live = false;
    this.stream = null;
    this.closed = false;
    this.unsaved = [];        // changes received, not yet in the replica
    this.saveTimer = null;
    this.retry = null;        // the timer that opens a dropped stream again
    this.droppedAt = null;    // when the stream dropped, while it stays down
    this.onOnline = () => { if (!this.live && this.droppedAt !== null) this.reconnectAfter(0); };
    window.addEventListener('online', this.onOnline);
    // The server answers again: what waits goes up (the stream may never have dropped).
    this.onReachable = (e) => { if (e.detail) this.send(); };
    reachability.addEventListener('change', this.onReachable);
    this.outbox = new Outbox(name, {
      record: (id) => this.server.get(id),
      order: () => [...this.server.values()].sort(byOrder).map((record) => record.id),
      acknowledge: (id, state) => this.acknowledge(id, state),
    });
    for (const kind of ['conflict', 'refused', 'waiting']) this.outbox.addEventListener(kind, (e) => this.emit(kind, e.detail));
    this.outbox.addEventListener('change', (e) => this.emit('change', { id: e.detail.id || undefined }));
  }

  // Shows the device's copy and its waiting edits at once, then follows the server.
  async open() {
    try {
      const { seq, records } = await replica.load(this.name);
      for (const record of records) this.server.set(record.id, { id: record.id, rev: record.rev, position: record.position, fields: parseTyped(record.fields).entries });
      this.seq = seq;
    } catch { this.server.clear(); this.seq = 0; }
    await this.outbox.load().catch(() => undefined);
    if (this.closed) return;
    this.emit('change', {});
    this.connect();
  }

  close() {
    this.closed = true;
    this.outbox.closed = true;
    clearTimeout(this.retry);
    window.removeEventListener('online', this.onOnline);
    reachability.removeEventListener('change', this.onReachable);
    this.stream?.close();
    this.saveChanges();
  }

  // The records as this device shows them, in order: the server's, with the edits waiting here
  // over them (`pending` true), the order waiting here too.
  records() {
    const shown = new Map();
    for (const [id, record] of this.server) shown.set(id, record);
    for (const id of this.outbox.pendingIDs()) {
      const record = this.get(id);
      if (record) shown.set(id, record); else shown.delete(id);
    }
    const ordered = [...shown.values()].sort(byOrder);
    const wanted = this.outbox.wantedOrder();
    if (!wanted) return ordered;
    // The rows moved here (and not by someone else meanwhile) are marked as waiting.
    const moved = new Set(orderMoves(wanted.base, wanted.desired, ordered.map((record) => record.id)).map((move) => move.id));
    const at = new Map(wanted.desired.map((id, index) => [id, index]));
    const placed = ordered.filter((record) => at.has(record.id)).sort((a, b) => at.get(a.id) - at.get(b.id));
    const rest = ordered.filter((record) => !at.has(record.id));
    return [...placed, ...rest].map((record) => (moved.has(record.id) && !record.pending ? { ...record, moved: true } : record));
  }

  // One record as this device shows it (undefined when it has none or deleted it).
  get(id) {
    const fields = this.outbox.wanted(id);
    const known = this.server.get(id);
    if (fields === undefined) return known;
    return fields === null ? undefined : { id, rev: known?.rev ?? 0, position: known?.position ?? '\uffff', fields, pending: true, version: this.outbox.version(id) };
  }

  // How many edits wait for the server.
  get pending() { return this.outbox.size; }

  // Writes the record's fields (a Map of typed values), made here or edited. `base` is the state
  // the edit was made on when it is older than what the device has now ({rev, fields}). Each
  // edit resolves once it is kept on the device.
  put(id, fields, base) { return this.queued(this.outbox.edit(id, fields, base)); }

  delete(id, base) { return this.queued(this.outbox.edit(id, null, base)); }

  // Moves `id` first, last, or before or after `anchor`, in the order shown.
  move(id, to, anchor) {
    const order = this.records().map((record) => record.id);
    return this.queued(this.outbox.reorder(applyMoves(order, [{ id, to, anchor }])));
  }

  queued(kept) {
    this.send();
    return kept;
  }

  // Sends what waits, once the stream is caught up (moves are planned against the server's order).
  send() { if (this.live) this.outbox.flush(); }

  connect() {
    this.retry = null;
    this.stream?.close();
    const since = this.seq;
    this.stream = new EventSource(path('collections', this.name, 'events') + (since ? `?since=${since}` : ''));
    this.stream.addEventListener('change', (e) => this.apply(parseTyped(e.data), Number(e.lastEventId)));
    this.stream.addEventListener('ready', (e) => {
      this.seq = Math.max(this.seq, Number(e.lastEventId) || 0);
      this.live = true;
      this.emit('live', true);
      this.send();
    });
    this.stream.addEventListener('expired', () => {
      // The server no longer has the changes since the kept seq: the copy is read again from 0.
      this.stream.close();
      this.unsaved = [];
      replica.forget(this.name).catch(() => undefined).then(() => {
        if (this.closed) return;
        this.server.clear();
        this.seq = 0;
        this.emit('change', {});
        this.connect();
      });
    });
    // A collection this person may no longer read (or that is gone) leaves the device, its
    // waiting edits too (the server would refuse them).
    for (const kind of ['revoked', 'dropped']) {
      this.stream.addEventListener(kind, () => this.leave(kind, undefined, true));
    }
    this.stream.addEventListener('renamed', (e) => this.leave('renamed', JSON.parse(e.data).to, false));
    // A dropped stream is opened again by this client (EventSource's own retry waits 3 s unless
    // the server said otherwise, and a page opened offline never heard it), from the seq the
    // device is current to, for as long as it takes, and at once when the browser says it is
    // online again; a look at the server tells whether the device is offline meanwhile.
    this.stream.addEventListener('open', () => { this.droppedAt = null; });
    this.stream.onerror = () => {
      this.stream.close();
      this.live = false;
      this.emit('live', false);
      this.droppedAt ??= Date.now();
      const delay = SyncedCollection.reconnectDelay(Date.now() - this.droppedAt);
      // A session that ended is not retried: the stream would be refused forever.
      probe().then((status) => {
        if (status === 401) this.emit('waiting', { message: 'the session ended: log in again to send what waits here', status });
        else this.reconnectAfter(delay);
      });
    };
  }

  reconnectAfter(delay) {
    if (this.closed) return;
    clearTimeout(this.retry);
    this.retry = setTimeout(() => { if (!this.closed) this.connect(); }, delay);
  }

  leave(kind, to, withOutbox) {
    this.stream.close();
    if (this.closed) return;
    this.live = false;
    this.unsaved = [];
    this.emit('live', false);
    this.emit('gone', { kind, to });
    replica.forget(this.name, { outbox: withOutbox }).catch(() => undefined);
  }

  apply(change, seq) {
    const id = plain(member(change, 'id'));
    if (plain(member(change, 'deleted'))) {
      this.server.delete(id);
      this.keep({ id, deleted: true }, seq);
    } else {
      const fields = member(change, 'fields');
      const rev = plain(member(change, 'rev'));
      const position = plain(member(change, 'position'));
      this.server.set(id, { id, rev, position, fields: fields.entries });
      this.keep({ id, rev, position, fields: encodeTyped(fields) }, seq);
    }
    this.seq = seq;
    this.emit('change', { id, flash: this.live });
  }

  // A write the server took, shown as the server now has it before its change arrives.
  acknowledge(id, { rev, fields }) {
    const known = this.server.get(id);
    if (known && known.rev >= rev) return;
    if (fields === null) this.server.delete(id);
    else this.server.set(id, { id, rev, position: known?.position ?? '\uffff', fields });
  }

  // Changes go to the replica in batches, each with the seq it is current to.
  keep(change, seq) {
    this.unsaved.push(change);
    this.unsavedSeq = seq;
    if (!this.saveTimer) this.saveTimer = setTimeout(() => this.saveChanges(), 100);
  }

  saveChanges() {
    clearTimeout(this.saveTimer);
    this.saveTimer = null;
    if (!this.unsaved.length) return;
    replica.remember(this.name, this.unsaved, this.unsavedSeq).catch(() => undefined);
    this.unsaved = [];
  }

  emit(kind, detail) { this.dispatchEvent(new CustomEvent(kind, { detail })); }
}
