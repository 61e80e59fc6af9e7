// The Activity view: who changed the collection, when, from which device and front (the
// server's change log, LOG), filtered by person or device; and "undo from here": a preview of
// what taking that person's or device's changes back would write (REVERT … DRY-RUN), then the
// revert itself, as new revisions every device receives.
import { callTyped, path, OfflineError } from './api.js';
import { member, display, plain } from './values.js';
import { element, button, say } from './dom.js';
import { when } from './team.js';

const $ = (selector) => document.querySelector(selector);
let turn = 0;

function who(by) {
  const device = plain(member(by, 'device'));
  const label = plain(member(by, 'label'));
  return { user: plain(member(by, 'user')), device, shown: label || (device === 'password' ? 'password login' : device), via: plain(member(by, 'via')) };
}

function stateText(state) {
  if (plain(member(state, 'deleted'))) return '(deleted)';
  const fields = member(state, 'fields');
  return fields ? [...fields.entries].map(([k, v]) => `${k}: ${display(v)}`).join(', ') : '';
}

// The filter's value: '' (everyone), 'by:<user>' or 'device:<id>'.
function filterQuery(filter) {
  if (filter.startsWith('by:')) return { by: filter.slice(3) };
  if (filter.startsWith('device:')) return { device: filter.slice(7) };
  return {};
}

export async function showActivity(collection) {
  const mine = ++turn;
  const tbody = $('#activity tbody');
  const picker = $('#activity-filter');
  if (!collection) { tbody.replaceChildren(); return; }
  const filter = picker.value;
  const query = new URLSearchParams({ limit: '200', ...filterQuery(filter) });
  let result;
  try {
    result = await callTyped('GET', path('collections', collection, 'log') + '?' + query);
  } catch (error) {
    if (!(error instanceof OfflineError)) throw error;
    // The log is the server's: nothing of it is kept on the device. Shown again once it answers.
    if (mine === turn) tbody.replaceChildren(note('The activity is kept on the server, which cannot be reached now: it shows here once the server answers again.', 'offline'));
    return;
  }
  if (mine !== turn) return;
  if (!result.ok) { say(result.json?.message || 'cannot read the activity', true); return; }
  const changes = member(result.value, 'changes').items.slice().reverse();
  // Everyone and every device seen so far stay in the picker.
  const known = new Set([...picker.options].map((option) => option.value));
  for (const change of changes) {
    const by = who(member(change, 'by'));
    for (const [value, text] of [[`by:${by.user}`, `${by.user} (every device)`], [`device:${by.device}`, `${by.user} on ${by.shown}`]]) {
      if (by.device === '-' || known.has(value)) continue;
      known.add(value);
      picker.append(new Option(text, value));
    }
  }
  tbody.replaceChildren(...changes.map((change) => {
    const seq = plain(member(change, 'seq'));
    const by = who(member(change, 'by'));
    const tr = element('tr', undefined, { 'data-seq': String(seq) });
    const actions = element('td', undefined, { class: 'actions' });
    if (filter) {
      actions.append(button('Undo from here', `Undo what ${by.shown} changed from seq ${seq} on`,
        () => previewUndo(collection, Number(seq) - 1, filterQuery(filter), picker.selectedOptions[0].text)));
    }
    const cell = (text, name) => element('td', text, { class: name });
    tr.append(cell(when(plain(member(change, 'time'))), 'when'), cell(by.user, 'who'), cell(by.shown, 'device'), cell(by.via, 'via'),
      cell(plain(member(change, 'id')), 'record'), cell(stateText(change), 'now'), actions);
    return tr;
  }));
  if (changes.length === 0) tbody.append(note('No changes kept.'));
}

// A row that says something instead of changes.
function note(text, name) {
  const row = element('tr', undefined, name ? { class: name } : undefined);
  row.append(element('td', text, { colspan: '7' }));
  return row;
}

// What the revert would write, shown before anything is written; Undo writes it.
async function previewUndo(collection, to, author, name) {
  const preview = await callTyped('POST', path('collections', collection, 'revert'), { to, dry_run: true, ...author });
  if (!preview.ok) { say(preview.json?.message || 'cannot work out the undo', true); return; }
  const dialog = $('#undo-dialog');
  $('#undo-who').textContent = name;
  const list = $('#undo-records');
  const records = member(preview.value, 'records').items;
  const kept = member(preview.value, 'kept_records').items;
  list.replaceChildren(...records.map((state) => element('li', `${plain(member(state, 'id'))} → ${stateText(state)}`)),
    ...kept.map((entry) => element('li', `${plain(member(entry, 'id'))}: kept, changed since by ${who(member(entry, 'changed_by')).user}`, { class: 'kept' })));
  if (records.length === 0 && kept.length === 0) list.append(element('li', 'Nothing to undo: every record is already back.'));
  $('#undo-confirm').disabled = records.length === 0;
  dialog.returnValue = '';
  dialog.showModal();
  dialog.addEventListener('close', async () => {
    if (dialog.returnValue !== 'undo') return;
    const done = await callTyped('POST', path('collections', collection, 'revert'), { to, ...author });
    if (!done.ok) { say(done.json?.message || 'the undo failed; try it again to finish', true); return; }
    say(`undid ${plain(member(done.value, 'written'))} record(s) of ${name}` +
      (plain(member(done.value, 'kept')) ? `; ${plain(member(done.value, 'kept'))} changed since by others, kept` : ''));
    showActivity(collection);
  }, { once: true });
}
