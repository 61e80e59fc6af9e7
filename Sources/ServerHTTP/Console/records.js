// The records table: the collection's records in order, kept live by its event stream,
// edited in place (typed; lists, dictionaries and data as typed JSON), added (a whole record,
// written once), deleted (with undo while the tombstone is fresh) and reordered; its columns,
// filter and sort come from the column view (columns.js).
import { call, callTyped, path, OfflineError } from './api.js';
import { encodeTyped, plain, member, display, editor, readEditor, sameValue } from './values.js';
import { element, button, say, clockIcon } from './dom.js';
import { ColumnView } from './columns.js';
import { askConflict, showHistory } from './dialogs.js';
import { SyncedCollection } from './synced.js';

const table = document.querySelector('#records');
const head = table.querySelector('thead tr');
const body = table.querySelector('tbody');
const live = document.querySelector('#live');
const pendingCount = document.querySelector('#pending');

let collection = null;
let synced = null;            // SyncedCollection: the server's records, the edits waiting here
let records = new Map();      // id -> {id, rev, position, fields: Map, pending?}, as shown, in order
let rows = new Map();         // id -> <tr>
let columns = [];             // shown, in order
let shape = '';               // what the rows were made for: columns and view
let extraColumns = new Map(); // added locally, not yet in any record: name -> type
let knownColumns = null;      // the columns' order once the first replay ended; null before
let view = null;              // ColumnView
let editing = null;           // {id, field, td}
let renderQueued = false;
let flashing = new Set();     // ids changed live, to flash at the next render

export function showCollection(name) {
  synced?.close();
  synced = null;
  collection = name;
  records = new Map();
  rows = new Map();
  columns = [];
  shape = '';
  extraColumns = new Map();
  knownColumns = null;
  view = name ? new ColumnView(name) : null;
  editing = null;
  flashing = new Set();
  head.replaceChildren();
  body.replaceChildren();
  live.classList.remove('on');
  delete live.dataset.ready;
  pendingCount.hidden = true;
  document.querySelector('#filter').value = '';
  if (!name) return;
  // The device's copy and the edits waiting here first (with no network they are all there
  // is), then the stream from where the copy ends.
  const opened = new SyncedCollection(name);
  synced = opened;
  opened.addEventListener('change', (e) => {
    if (e.detail.flash && e.detail.id !== undefined) flashing.add(e.detail.id);
    queueRender();
  });
  opened.addEventListener('live', (e) => {
    live.classList.toggle('on', e.detail);
    live.title = e.detail ? 'live' : 'reconnecting';
    if (!e.detail) return;
    live.dataset.ready = 'yes';
    if (!knownColumns) knownColumns = naturalColumns();
  });
  opened.addEventListener('conflict', (e) => say(`${e.detail.id} was changed elsewhere too: this device's version is kept as the conflict copy ${e.detail.copy}`));
  opened.addEventListener('refused', (e) => say(`${e.detail.id}: ${e.detail.message}`, true));
  opened.addEventListener('waiting', (e) => say(`edits made here wait: ${e.detail.message}`, true));
  opened.addEventListener('gone', (e) => {
    if (synced !== opened) return;
    const { kind, to } = e.detail;
    if (kind !== 'renamed') { say(`${collection} is no longer available (${kind})`, true); return; }
    say(`renamed to ${to}`);
    showCollection(to);
  });
  opened.open().then(() => { live.dataset.since = opened.seq; });
}

export function currentCollection() { return collection; }

function queueRender() {
  if (!renderQueued) { renderQueued = true; requestAnimationFrame(render); }
}

// The collection's fields: as first loaded, each where it first appears (records in list
// order), then the ones added here and not yet in any record; a field that appears later
// (someone added it, anywhere in the list) comes last, and the columns already shown stay put.
export function naturalColumns() {
  const present = new Set();
  const appearing = [];
  for (const record of records.values()) {
    for (const name of record.fields.keys()) if (!present.has(name)) { present.add(name); appearing.push(name); }
  }
  for (const name of extraColumns.keys()) if (!present.has(name)) { present.add(name); appearing.push(name); }
  if (!knownColumns) return appearing;
  for (const name of appearing) if (!knownColumns.includes(name)) knownColumns.push(name);
  return knownColumns.filter((name) => present.has(name));
}

export function fieldType(name) {
  for (const record of records.values()) { const v = record.fields.get(name); if (v) return v.type; }
  return extraColumns.get(name) || 'string';
}

// What a row was drawn from: a new rev, an edit waiting here, or a waiting move draws it anew.
function rowKey(record) {
  return `${record.rev}/${record.pending ? 'p' + record.version : ''}/${record.moved ? 'm' : ''}`;
}

function render() {
  renderQueued = false;
  if (!view || !synced) return;
  records = new Map(synced.records().map((record) => [record.id, record]));
  showPending();
  columns = view.shown(naturalColumns());
  const nextShape = [columns.join('\u0000'), view.isListOrder, JSON.stringify(view.sort)].join('\u0001');
  const shapeChanged = nextShape !== shape;
  shape = nextShape;
  if (shapeChanged) head.replaceChildren(element('th', '', { scope: 'col' }), header('id'), ...columns.map(header), element('th', '', { scope: 'col' }));
  document.querySelector('#view-hint').hidden = view.isListOrder;
  const listed = [...records.values()];
  const place = new Map(listed.map((record, index) => [record.id, index]));
  const ordered = view.sort ? listed.sort((a, b) => view.compare(a, b) || place.get(a.id) - place.get(b.id)) : listed;
  let previous = null;
  for (const record of ordered) {
    let tr = rows.get(record.id);
    const isEditing = editing && editing.id === record.id;
    if (!tr || (!isEditing && (shapeChanged || tr.dataset.key !== rowKey(record)))) {
      const fresh = row(record);
      if (tr) tr.replaceWith(fresh);
      tr = fresh;
      rows.set(record.id, tr);
      if (flashing.has(record.id)) { tr.classList.add('flash'); setTimeout(() => tr.classList.remove('flash'), 1600); }
    }
    tr.hidden = !view.matches(record);
    const expected = previous ? previous.nextElementSibling : body.firstElementChild;
    if (expected !== tr) body.insertBefore(tr, expected);
    previous = tr;
  }
  flashing.clear();
  for (const [id, tr] of rows) if (!records.has(id)) { tr.remove(); rows.delete(id); }
  renderColumnsPanel();
}

// How many edits of this collection wait for the server (none: hidden).
function showPending() {
  const waiting = synced.pending;
  pendingCount.hidden = waiting === 0;
  pendingCount.textContent = waiting === 1 ? '1 edit waiting' : `${waiting} edits waiting`;
}

// A column's header: a button that sorts the view by it (up, down, the list's order).
function header(name) {
  const th = element('th', undefined, { scope: 'col' });
  const sorted = view.sort && view.sort.field === name;
  const mark = sorted ? (view.sort.descending ? ' ▼' : ' ▲') : '';
  th.append(button(name + mark, `Sort by ${name}`, () => { view.cycleSort(name); queueRender(); }, 'sort'));
  if (sorted) th.setAttribute('aria-sort', view.sort.descending ? 'descending' : 'ascending');
  return th;
}

function row(record) {
  const tr = document.createElement('tr');
  tr.dataset.id = record.id;
  tr.dataset.rev = record.rev;
  tr.dataset.key = rowKey(record);
  if (record.pending || record.moved) tr.classList.add('pending');
  const handle = cell('handle', '⠿');
  if (view.isListOrder) {
    handle.title = 'drag to reorder';
    handle.addEventListener('pointerdown', (e) => startDrag(e, record.id));
  } else {
    handle.classList.add('off');
    handle.title = 'sorted or filtered: clear both to reorder';
  }
  const idCell = cell('id', record.id);
  idCell.dataset.label = 'id';
  if (record.pending || record.moved) {
    idCell.append(element('span', 'waiting', { class: 'pending-mark', title: 'changed on this device; waiting for the server' }));
  }
  tr.append(handle, idCell);
  for (const name of columns) {
    const v = record.fields.get(name);
    const td = cell('value', display(v));
    td.dataset.field = name;
    td.dataset.label = name;
    if (!v) td.classList.add('missing');
    if (v && (v.type === 'integer' || v.type === 'real')) td.classList.add('number');
    td.tabIndex = 0;
    td.addEventListener('dblclick', () => startEdit(record.id, name, td));
    // Only the cell's own keys: Enter in its editor bubbles up here too.
    td.addEventListener('keydown', (e) => { if (e.target === td && (e.key === 'Enter' || e.key === 'F2')) { e.preventDefault(); startEdit(record.id, name, td); } });
    tr.append(td);
  }
  const actions = cell('actions', '');
  if (view.isListOrder) {
    actions.append(button('↑', `Move ${record.id} up`, () => moveBy(record.id, -1)), button('↓', `Move ${record.id} down`, () => moveBy(record.id, 1)));
  }
  const history = button('', `History of ${record.id}`, () => showHistory(collection, record.id, records.get(record.id)?.rev, (fields, rev) => put(record.id, fields, rev)));
  history.append(clockIcon());
  actions.append(history, button('✕', `Delete ${record.id}`, () => remove(record.id), 'danger'));
  tr.append(actions);
  return tr;
}

function cell(kind, text) {
  return element('td', text, { class: kind });
}

// Editing: the record as it was when the edit began is the base (If-Match). Online with nothing
// waiting, the edit is written at once and a change made meanwhile elsewhere comes back as 409:
// the person picks, seeing everything the other person changed. Offline (or behind edits still
// waiting) it joins the outbox and is merged by the agent's rules when the server answers.
function startEdit(id, field, td) {
  if (editing) return;
  const record = records.get(id);
  if (!record) return;
  const type = fieldType(field);
  const base = { rev: record.rev, fields: new Map(record.fields), pending: record.pending };
  const input = editor(type, record.fields.get(field));
  input.setAttribute('aria-label', `${field} of ${id}`);
  editing = { id, field, td };
  td.classList.add('editing');
  td.replaceChildren(input);
  input.focus();
  let finished = false;
  const finish = async (keep) => {
    if (finished) return;
    finished = true;
    let value = null;
    if (keep) {
      try { value = readEditor(type, input); } catch (error) { say(error.message, true); finished = false; input.focus(); return; }
    }
    editing = null;
    td.classList.remove('editing');
    const latest = records.get(id);
    const old = rows.get(id);
    if (latest && old) { const fresh = row(latest); old.replaceWith(fresh); rows.set(id, fresh); }
    if (keep && !sameValue(value, base.fields.get(field))) await save(id, field, value, base);
  };
  input.addEventListener('keydown', (e) => {
    e.stopPropagation();
    // A text box takes Enter as a new line: it saves with Ctrl/⌘+Enter.
    const multiline = input.tagName === 'TEXTAREA';
    if (e.key === 'Enter' && (!multiline || e.ctrlKey || e.metaKey)) { e.preventDefault(); finish(true); }
    if (e.key === 'Escape') { e.preventDefault(); finish(false); rows.get(id)?.querySelector(`td[data-field="${CSS.escape(field)}"]`)?.focus(); }
  });
  input.addEventListener('blur', () => finish(true));
}

// Whether a write goes to the server at once: the stream is live and nothing waits before it.
function writesNow() {
  return synced.live && synced.pending === 0;
}

// Sends `request()` when writes go at once; null when the edit belongs in the outbox instead
// (offline, behind edits waiting, or the server found gone by the request itself).
async function writeNow(request) {
  if (!writesNow()) return null;
  try { return await request(); } catch (error) { if (error instanceof OfflineError) return null; throw error; }
}

// Says that an edit was kept here for the server.
function keptHere(what) {
  say(`${what} on this device; it waits for the server`);
}

async function save(id, field, value, base) {
  const fields = new Map(base.fields);
  fields.set(field, value);
  const result = base.pending ? null : await writeNow(() => put(id, fields, base.rev));
  if (result === null) {
    synced.put(id, fields, base.pending ? undefined : { rev: base.rev, fields: base.fields });
    keptHere(`saved ${field} of ${id}`);
    return;
  }
  if (result.ok) { say(`saved ${field} of ${id}`); return; }
  if (result.status !== 409) { say(result.json?.message || `could not save (HTTP ${result.status})`, true); return; }
  const current = member(result.value, 'current');
  const theirFields = member(current, 'fields');
  const deleted = plain(member(current, 'deleted'));
  const theirs = theirFields ? theirFields.entries : new Map();
  const keep = await askConflict(id, field, value, base.fields, theirs, deleted);
  if (keep !== 'mine') { say(`kept their ${field} of ${id}`); return; }
  const merged = new Map(theirFields ? theirFields.entries : base.fields);
  await save(id, field, value, { rev: plain(member(current, 'rev')), fields: merged });
}

function put(id, fields, rev) {
  const json = encodeTyped({ type: 'dict', entries: fields });
  const headers = rev ? { 'If-Match': `"${rev}"` } : { 'If-None-Match': '*' };
  return callTyped('PUT', path('collections', collection, 'records', id), json, headers);
}

// A new record, its fields typed in the form, written in one PUT (agents never see it half
// filled in).
export async function addRecord(id, fields) {
  const result = await writeNow(() => put(id, fields, 0));
  if (result === null) {
    if (records.has(id)) { say(`a record "${id}" already exists in ${collection}: pick another id, or edit that one`, true); return false; }
    synced.put(id, fields, null);
    keptHere(`added ${id}`);
    return true;
  }
  if (result.ok) say(`added ${id}`);
  else say(result.json?.message || `could not add ${id}`, true);
  return result.ok;
}

// The add-record form: an input for each of the collection's fields, typed as the field is;
// one left empty is not written.
export function fillRecordForm(container) {
  const inputs = naturalColumns().map((name) => {
    const type = fieldType(name);
    const input = editor(type, undefined);
    if (type === 'bool') input.prepend(new Option('', '', true, true));
    if (input.tagName !== 'TEXTAREA') input.value = '';
    input.dataset.field = name;
    input.setAttribute('aria-label', name);
    const label = element('label', `${name} `);
    label.append(input);
    return { name, type, input, label };
  });
  container.replaceChildren(...inputs.map((entry) => entry.label));
  return () => {
    const fields = new Map();
    for (const { name, type, input } of inputs) {
      if (input.value.trim() === '' || (input.tagName === 'TEXTAREA' && input.value === editor(type, undefined).value)) continue;
      fields.set(name, readEditor(type, input));
    }
    return fields;
  };
}

export function addField(name, type) {
  extraColumns.set(name, type);
  queueRender();
}

// A delete leaves a tombstone at the next rev: for a while the record can be put back (its
// fields, then its place after the record that was before it).
async function remove(id) {
  const record = records.get(id);
  if (!record || !confirm(`Delete ${id}?`)) return;
  const ordered = [...records.values()];
  const before = ordered[ordered.indexOf(record) - 1]?.id;
  try {
    const answer = record.pending ? null : await writeNow(() => call('DELETE', path('collections', collection, 'records', id), undefined, { 'If-Match': `"${record.rev}"` }));
    if (answer === null) {
      synced.delete(id, record.pending ? undefined : { rev: record.rev, fields: record.fields });
      keptHere(`deleted ${id}`);
      return;
    }
    const { rev } = answer;
    const at = collection;
    let undone = false;
    const undo = async () => {
      if (undone || at !== collection) return;
      undone = true;
      const back = await put(id, record.fields, rev);
      if (!back.ok) { say(back.json?.message || `could not bring ${id} back`, true); return; }
      const restored = plain(member(back.value, 'rev'));
      const place = before ? { to: 'after', anchor: before } : { to: 'first' };
      try { await call('POST', path('collections', collection, 'records', id, 'move'), place, { 'If-Match': `"${restored}"` }); } catch { /* the neighbour is gone: it stays last */ }
      say(`${id} is back`);
    };
    say(`deleted ${id}`, false, { label: 'Undo', run: undo });
    setTimeout(() => { if (!undone && document.querySelector('#message').textContent.startsWith(`deleted ${id}`)) say(''); }, 15000);
  } catch (error) { say(error.message, true); }
}

async function move(id, to, anchor) {
  const record = records.get(id);
  if (!record) return;
  try {
    const answer = await writeNow(() => call('POST', path('collections', collection, 'records', id, 'move'), anchor ? { to, anchor } : { to }, { 'If-Match': `"${record.rev}"` }));
    if (answer === null) { synced.move(id, to, anchor); keptHere(`moved ${id}`); return; }
    say(`moved ${id}`);
  } catch (error) { say(error.message, true); }
}

function moveBy(id, step) {
  const ordered = [...records.keys()];
  const at = ordered.indexOf(id);
  const neighbour = ordered[at + step];
  if (neighbour === undefined) return;
  move(id, step < 0 ? 'before' : 'after', neighbour).then(() => rows.get(id)?.querySelector(step < 0 ? 'button' : 'button + button')?.focus());
}

// Drag by the handle with pointer events (mouse, touch, pen): dropped on the upper half of a
// row it goes before it, on the lower half after it.
function startDrag(event, id) {
  event.preventDefault();
  const source = rows.get(id);
  source.classList.add('dragging');
  let target = null;
  let where = null;
  const clear = () => { for (const tr of body.querySelectorAll('.drop-before, .drop-after')) tr.classList.remove('drop-before', 'drop-after'); };
  const onMove = (e) => {
    clear();
    const tr = document.elementFromPoint(e.clientX, e.clientY)?.closest('tbody tr');
    if (!tr || tr === source) { target = null; return; }
    const box = tr.getBoundingClientRect();
    where = e.clientY < box.top + box.height / 2 ? 'before' : 'after';
    target = tr.dataset.id;
    tr.classList.add(where === 'before' ? 'drop-before' : 'drop-after');
  };
  const onUp = (e) => {
    onMove(e);
    clear();
    source.classList.remove('dragging');
    document.removeEventListener('pointermove', onMove);
    document.removeEventListener('pointerup', onUp);
    if (target) move(id, where, target);
  };
  document.addEventListener('pointermove', onMove);
  document.addEventListener('pointerup', onUp);
}

// The columns panel: each field with show/hide and move left/right.
function renderColumnsPanel() {
  const panel = document.querySelector('#columns-panel');
  if (panel.hidden || !view) return;
  const natural = naturalColumns();
  panel.replaceChildren(...view.all(natural).map((name) => {
    const line = element('div', undefined, { class: 'column-choice', 'data-column': name });
    const shown = element('input', undefined, { type: 'checkbox', 'aria-label': `Show ${name}` });
    shown.checked = !view.hidden.has(name);
    shown.addEventListener('change', () => { view.toggle(name); queueRender(); });
    const label = element('label');
    label.append(shown, ` ${name}`);
    line.append(label, button('←', `Move column ${name} left`, () => { view.move(name, -1, natural); queueRender(); }),
      button('→', `Move column ${name} right`, () => { view.move(name, 1, natural); queueRender(); }));
    return line;
  }));
}

document.querySelector('#columns-button').addEventListener('click', () => {
  const panel = document.querySelector('#columns-panel');
  panel.hidden = !panel.hidden;
  renderColumnsPanel();
});

document.querySelector('#filter').addEventListener('input', (e) => {
  if (!view) return;
  view.filter = e.target.value.trim();
  queueRender();
});
