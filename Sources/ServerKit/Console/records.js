// The records table: the collection's records in order, kept live by its event stream,
// edited in place (typed), added, deleted and reordered.
import { call, callTyped, path } from './api.js';
import { parseTyped, encodeTyped, plain, member, display, editable, editor, readEditor, sameValue } from './values.js';
import { say } from './app.js';
import { element, button } from './dom.js';

const table = document.querySelector('#records');
const head = table.querySelector('thead tr');
const body = table.querySelector('tbody');
const live = document.querySelector('#live');

let collection = null;
let events = null;
let records = new Map();      // id -> {id, rev, position, fields: Map}
let rows = new Map();         // id -> <tr>
let columns = [];
let extraColumns = new Map(); // added locally, not yet in any record: name -> type
let ready = false;
let editing = null;           // {id, field, td}
let renderQueued = false;

export function showCollection(name) {
  if (events) events.close();
  collection = name;
  records = new Map();
  rows = new Map();
  columns = [];
  extraColumns = new Map();
  ready = false;
  editing = null;
  head.replaceChildren();
  body.replaceChildren();
  live.classList.remove('on');
  if (!name) return;
  connect();
}

export function currentCollection() { return collection; }

function connect() {
  events = new EventSource(path('collections', collection, 'events'));
  events.addEventListener('change', (e) => apply(parseTyped(e.data), ready));
  events.addEventListener('ready', () => { ready = true; live.classList.add('on'); live.title = 'live'; });
  events.addEventListener('expired', () => { events.close(); showCollection(collection); });
  for (const kind of ['revoked', 'dropped']) {
    events.addEventListener(kind, () => { events.close(); live.classList.remove('on'); say(`${collection} is no longer available (${kind})`, true); });
  }
  events.addEventListener('renamed', (e) => { const to = JSON.parse(e.data).to; collection = to; say(`renamed to ${to}`); });
  events.onerror = () => { live.classList.remove('on'); live.title = 'reconnecting'; };
}

function apply(change, flash) {
  const id = plain(member(change, 'id'));
  if (plain(member(change, 'deleted'))) {
    records.delete(id);
  } else {
    records.set(id, { id, rev: plain(member(change, 'rev')), position: plain(member(change, 'position')), fields: member(change, 'fields').entries, flash });
  }
  if (!renderQueued) { renderQueued = true; requestAnimationFrame(render); }
}

function byOrder(a, b) {
  if (a.position !== b.position) return a.position < b.position ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function fieldType(name) {
  for (const record of records.values()) { const v = record.fields.get(name); if (v) return v.type; }
  return extraColumns.get(name) || 'string';
}

function render() {
  renderQueued = false;
  const names = new Set(extraColumns.keys());
  for (const record of records.values()) for (const name of record.fields.keys()) names.add(name);
  const nextColumns = [...names].sort();
  const columnsChanged = nextColumns.join('\u0000') !== columns.join('\u0000');
  columns = nextColumns;
  if (columnsChanged) {
    head.replaceChildren(...['', 'id', ...columns, ''].map((name) => element('th', name, { scope: 'col' })));
  }
  const ordered = [...records.values()].sort(byOrder);
  let previous = null;
  for (const record of ordered) {
    let tr = rows.get(record.id);
    const isEditing = editing && editing.id === record.id;
    if (!tr || (!isEditing && (columnsChanged || Number(tr.dataset.rev) !== record.rev))) {
      const fresh = row(record);
      if (tr) tr.replaceWith(fresh);
      tr = fresh;
      rows.set(record.id, tr);
      if (record.flash) { tr.classList.add('flash'); setTimeout(() => tr.classList.remove('flash'), 1600); record.flash = false; }
    }
    const expected = previous ? previous.nextElementSibling : body.firstElementChild;
    if (expected !== tr) body.insertBefore(tr, expected);
    previous = tr;
  }
  for (const [id, tr] of rows) if (!records.has(id)) { tr.remove(); rows.delete(id); }
}

function row(record) {
  const tr = document.createElement('tr');
  tr.dataset.id = record.id;
  tr.dataset.rev = record.rev;
  const handle = cell('handle', '⠿');
  handle.title = 'drag to reorder';
  handle.addEventListener('pointerdown', (e) => startDrag(e, record.id));
  const idCell = cell('id', record.id);
  tr.append(handle, idCell);
  for (const name of columns) {
    const v = record.fields.get(name);
    const td = cell('value', display(v));
    td.dataset.field = name;
    if (!v) td.classList.add('missing');
    if (v && (v.type === 'integer' || v.type === 'real')) td.classList.add('number');
    if (!v || editable.has(v.type)) {
      td.tabIndex = 0;
      td.addEventListener('dblclick', () => startEdit(record.id, name, td));
      // Only the cell's own keys: Enter in its editor bubbles up here too.
      td.addEventListener('keydown', (e) => { if (e.target === td && (e.key === 'Enter' || e.key === 'F2')) { e.preventDefault(); startEdit(record.id, name, td); } });
    } else {
      td.title = 'edit this kind of value with an agent or the API';
    }
    tr.append(td);
  }
  const actions = cell('actions', '');
  actions.append(
    button('↑', `Move ${record.id} up`, () => moveBy(record.id, -1)),
    button('↓', `Move ${record.id} down`, () => moveBy(record.id, 1)),
    button('✕', `Delete ${record.id}`, () => remove(record.id), 'danger'),
  );
  tr.append(actions);
  return tr;
}

function cell(kind, text) {
  return element('td', text, { class: kind });
}

// Editing: the record as it was when the edit began is the base (If-Match); a change made
// meanwhile elsewhere comes back as 409 and the user picks one of the two values.
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
    if (e.key === 'Enter') { e.preventDefault(); finish(true); }
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
  const theirs = theirFields ? theirFields.entries.get(field) : undefined;
  const keep = await askConflict(id, field, value, theirs, plain(member(current, 'deleted')));
  if (keep !== 'mine') { say(`kept their ${field} of ${id}`); return; }
  const merged = new Map(theirFields ? theirFields.entries : base.fields);
  await save(id, field, value, { rev: plain(member(current, 'rev')), fields: merged });
}

function put(id, fields, rev) {
  const json = encodeTyped({ type: 'dict', entries: fields });
  const headers = rev ? { 'If-Match': `"${rev}"` } : { 'If-None-Match': '*' };
  return callTyped('PUT', path('collections', collection, 'records', id), json, headers);
}

function askConflict(id, field, mine, theirs, deleted) {
  const dialog = document.querySelector('#conflict-dialog');
  document.querySelector('#conflict-field').textContent = field;
  document.querySelector('#conflict-record').textContent = id;
  document.querySelector('#conflict-mine').textContent = display(mine);
  document.querySelector('#conflict-theirs').textContent = deleted ? '(deleted)' : display(theirs);
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue), { once: true });
    dialog.showModal();
  });
}

export function addRecord(id) {
  const fields = new Map();
  return put(id, fields, 0).then((result) => {
    if (result.ok) say(`added ${id}`);
    else say(result.json?.message || `could not add ${id}`, true);
  });
}

export function addField(name, type) {
  extraColumns.set(name, type);
  render();
}

async function remove(id) {
  const record = records.get(id);
  if (!record || !confirm(`Delete ${id}?`)) return;
  try {
    await call('DELETE', path('collections', collection, 'records', id), undefined, { 'If-Match': `"${record.rev}"` });
    say(`deleted ${id}`);
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
