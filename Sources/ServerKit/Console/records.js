// The records table: the collection's records in order, kept live by its event stream,
// edited in place (typed; lists, dictionaries and data as typed JSON), added (a whole record,
// written once), deleted (with undo while the tombstone is fresh) and reordered; its columns,
// filter and sort come from the column view (columns.js).
import { call, callTyped, path, probe } from './api.js';
import { parseTyped, encodeTyped, plain, member, display, editor, readEditor, sameValue } from './values.js';
import { element, button, say, clockIcon } from './dom.js';
import { ColumnView } from './columns.js';
import { askConflict, showHistory } from './dialogs.js';
import * as replica from './replica.js';

const table = document.querySelector('#records');
const head = table.querySelector('thead tr');
const body = table.querySelector('tbody');
const live = document.querySelector('#live');

let collection = null;
let events = null;
let records = new Map();      // id -> {id, rev, position, fields: Map}
let rows = new Map();         // id -> <tr>
let columns = [];             // shown, in order
let shape = '';               // what the rows were made for: columns and view
let extraColumns = new Map(); // added locally, not yet in any record: name -> type
let knownColumns = null;      // the columns' order once the first replay ended; null before
let view = null;              // ColumnView
let editing = null;           // {id, field, td}
let renderQueued = false;
let opened = 0;               // numbers each opening: a replica read overtaken by another is dropped
let unsaved = [];             // changes received, not yet in the replica
let unsavedSeq = 0;
let saveTimer = null;

export function showCollection(name) {
  if (events) events.close();
  events = null;
  flushReplica();
  collection = name;
  records = new Map();
  rows = new Map();
  columns = [];
  shape = '';
  extraColumns = new Map();
  knownColumns = null;
  view = name ? new ColumnView(name) : null;
  editing = null;
  head.replaceChildren();
  body.replaceChildren();
  live.classList.remove('on');
  delete live.dataset.ready;
  document.querySelector('#filter').value = '';
  if (!name) return;
  const opening = ++opened;
  // The device's copy first (with no network it is all there is), then the stream from where it ends.
  replica.load(name).then(({ seq, records: kept }) => {
    if (opening !== opened) return;
    for (const record of kept) records.set(record.id, { id: record.id, rev: record.rev, position: record.position, fields: parseTyped(record.fields).entries });
    if (kept.length) queueRender();
    connect(seq);
  }, () => { if (opening === opened) connect(0); });
}

// Changes go to the replica in batches, each with the seq it is current to.
function keep(change, seq) {
  unsaved.push(change);
  unsavedSeq = seq;
  if (!saveTimer) saveTimer = setTimeout(flushReplica, 100);
}

function flushReplica() {
  clearTimeout(saveTimer);
  saveTimer = null;
  if (!unsaved.length || !collection) { unsaved = []; return; }
  replica.remember(collection, unsaved, unsavedSeq).catch(() => undefined);
  unsaved = [];
}

export function currentCollection() { return collection; }

function connect(since) {
  live.dataset.since = since;
  events = new EventSource(path('collections', collection, 'events') + (since ? `?since=${since}` : ''));
  events.addEventListener('change', (e) => apply(parseTyped(e.data), Number(e.lastEventId)));
  events.addEventListener('ready', () => {
    live.classList.add('on'); live.title = 'live'; live.dataset.ready = 'yes';
    if (!knownColumns) knownColumns = naturalColumns();
  });
  events.addEventListener('expired', () => {
    events.close();
    const name = collection;
    unsaved = [];
    replica.forget(name).then(() => showCollection(name), () => showCollection(name));
  });
  // A collection this person may no longer read leaves the device too.
  for (const kind of ['revoked', 'dropped']) {
    events.addEventListener(kind, () => {
      events.close(); live.classList.remove('on'); say(`${collection} is no longer available (${kind})`, true);
      unsaved = [];
      replica.forget(collection).catch(() => undefined);
    });
  }
  // Renamed: the copy under the old name goes, and the collection is read again under the new one.
  events.addEventListener('renamed', (e) => {
    const from = collection;
    const to = JSON.parse(e.data).to;
    say(`renamed to ${to}`);
    flushReplica();
    replica.forget(from).then(() => showCollection(to), () => showCollection(to));
  });
  // The stream reconnects by itself; a look at the server tells whether it is offline meanwhile.
  events.onerror = () => { live.classList.remove('on'); live.title = 'reconnecting'; probe(); };
}

function apply(change, seq) {
  const id = plain(member(change, 'id'));
  if (plain(member(change, 'deleted'))) {
    records.delete(id);
    keep({ id, deleted: true }, seq);
  } else {
    const flash = live.dataset.ready === 'yes';
    const fields = member(change, 'fields');
    const record = { id, rev: plain(member(change, 'rev')), position: plain(member(change, 'position')), fields: fields.entries, flash };
    records.set(id, record);
    keep({ id, rev: record.rev, position: record.position, fields: encodeTyped(fields) }, seq);
  }
  queueRender();
}

function queueRender() {
  if (!renderQueued) { renderQueued = true; requestAnimationFrame(render); }
}

function byOrder(a, b) {
  if (a.position !== b.position) return a.position < b.position ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

// The collection's fields: as first loaded, each where it first appears (records in list
// order), then the ones added here and not yet in any record; a field that appears later
// (someone added it, anywhere in the list) comes last, and the columns already shown stay put.
export function naturalColumns() {
  const present = new Set();
  const appearing = [];
  for (const record of [...records.values()].sort(byOrder)) {
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

function render() {
  renderQueued = false;
  if (!view) return;
  columns = view.shown(naturalColumns());
  const nextShape = [columns.join('\u0000'), view.isListOrder, JSON.stringify(view.sort)].join('\u0001');
  const shapeChanged = nextShape !== shape;
  shape = nextShape;
  if (shapeChanged) head.replaceChildren(element('th', '', { scope: 'col' }), header('id'), ...columns.map(header), element('th', '', { scope: 'col' }));
  document.querySelector('#view-hint').hidden = view.isListOrder;
  const ordered = [...records.values()].sort(view.sort ? (a, b) => view.compare(a, b) || byOrder(a, b) : byOrder);
  let previous = null;
  for (const record of ordered) {
    let tr = rows.get(record.id);
    const isEditing = editing && editing.id === record.id;
    if (!tr || (!isEditing && (shapeChanged || Number(tr.dataset.rev) !== record.rev))) {
      const fresh = row(record);
      if (tr) tr.replaceWith(fresh);
      tr = fresh;
      rows.set(record.id, tr);
      if (record.flash) { tr.classList.add('flash'); setTimeout(() => tr.classList.remove('flash'), 1600); record.flash = false; }
    }
    tr.hidden = !view.matches(record);
    const expected = previous ? previous.nextElementSibling : body.firstElementChild;
    if (expected !== tr) body.insertBefore(tr, expected);
    previous = tr;
  }
  for (const [id, tr] of rows) if (!records.has(id)) { tr.remove(); rows.delete(id); }
  renderColumnsPanel();
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

// Editing: the record as it was when the edit began is the base (If-Match); a change made
// meanwhile elsewhere comes back as 409 and the user picks, seeing everything the other
// person changed.
function startEdit(id, field, td) {
  if (editing) return;
  const record = records.get(id);
  if (!record) return;
  const type = fieldType(field);
  const base = { rev: record.rev, fields: new Map(record.fields) };
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

async function save(id, field, value, base) {
  const fields = new Map(base.fields);
  fields.set(field, value);
  const result = await put(id, fields, base.rev);
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
  const result = await put(id, fields, 0);
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
  const ordered = [...records.values()].sort(byOrder);
  const before = ordered[ordered.indexOf(record) - 1]?.id;
  try {
    const { rev } = await call('DELETE', path('collections', collection, 'records', id), undefined, { 'If-Match': `"${record.rev}"` });
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
    await call('POST', path('collections', collection, 'records', id, 'move'), anchor ? { to, anchor } : { to }, { 'If-Match': `"${record.rev}"` });
    say(`moved ${id}`);
  } catch (error) { say(error.message, true); }
}

function moveBy(id, step) {
  const ordered = [...records.values()].sort(byOrder).map((r) => r.id);
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
