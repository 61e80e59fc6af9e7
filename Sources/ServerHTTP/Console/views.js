// The operator's views: conflict copies, members and roles, devices, server status.
import { call, callTyped, path } from './api.js';
import { member, display, plain } from './values.js';
import { element, button as actionButton, say } from './dom.js';
import { when } from './team.js';

function fieldsText(record) {
  if (!record) return '(none)';
  if (plain(member(record, 'deleted'))) return '(deleted)';
  const fields = member(record, 'fields');
  if (!fields) return '(none)';
  return [...fields.entries].map(([k, v]) => `${k}: ${display(v)}`).join('\n');
}

// Each view's refreshes are numbered: one that finishes after a later one began shows
// nothing (two overlapping refreshes once filled a table twice).
const latest = { conflicts: 0, members: 0, devices: 0 };
const begin = (view) => ++latest[view];
const stale = (view, turn) => turn !== latest[view];

export async function showConflicts(collection) {
  const list = document.querySelector('#conflicts');
  const turn = begin('conflicts');
  if (!collection) { list.replaceChildren(); return; }
  const copies = await callTyped('GET', path('collections', collection, 'conflicts'));
  if (stale('conflicts', turn)) return;
  if (!copies.ok) { say(copies.json?.message || 'cannot read the conflicts', true); return; }
  const items = member(copies.value, 'conflicts').items;
  const boxes = [];
  if (items.length === 0) boxes.push(element('p', `No conflict copies in ${collection}.`));
  for (const copy of items) {
    const copyID = plain(member(copy, 'id'));
    const of = plain(member(copy, 'of'));
    const current = await callTyped('GET', path('collections', collection, 'records', of));
    if (stale('conflicts', turn)) return;
    const box = element('div', undefined, { class: 'conflict', 'data-copy': copyID });
    box.append(element('h3', of), element('p', `copy ${copyID}`, { class: 'hint' }));
    const choices = element('div', undefined, { class: 'choices' });
    const resolve = (keep) => async () => {
      try {
        await call('POST', path('collections', collection, 'conflicts', copyID, 'resolve'), { keep });
        say(`kept the ${keep === 'copy' ? 'copy' : 'current record'} of ${of}`);
        showConflicts(collection);
      } catch (error) { say(error.message, true); }
    };
    const mine = element('div');
    mine.append(element('h4', 'The copy'), element('pre', fieldsText(copy)), actionButton('Keep this copy', `Keep the copy of ${of}`, resolve('copy')));
    const theirs = element('div');
    theirs.append(element('h4', 'The record now'), element('pre', current.ok || current.status === 404 ? fieldsText(current.value) : '(unreadable)'),
      actionButton('Keep current', `Keep the current ${of}`, resolve('current')));
    choices.append(mine, theirs);
    box.append(choices);
    boxes.push(box);
  }
  list.replaceChildren(...boxes);
}

export async function showMembers(collection) {
  const tbody = document.querySelector('#members tbody');
  const turn = begin('members');
  for (const e of document.querySelectorAll('.collection-name')) e.textContent = collection || '';
  if (!collection) { tbody.replaceChildren(); return; }
  try {
    const { members } = await call('GET', path('collections', collection, 'members'));
    if (stale('members', turn)) return;
    const rows = [];
    for (const m of members) {
      const tr = element('tr');
      const role = element('select', undefined, { 'aria-label': `Role of ${m.user}` });
      for (const r of ['read', 'write', 'admin']) role.append(new Option(r, r, false, r === m.role));
      role.addEventListener('change', () => grant(collection, m.user, role.value));
      const roleCell = element('td');
      roleCell.append(role);
      const actions = element('td');
      actions.append(actionButton('Remove', `Remove ${m.user}`, () => grant(collection, m.user, null), 'danger'));
      tr.append(element('td', m.user), roleCell, actions);
      rows.push(tr);
    }
    tbody.replaceChildren(...rows);
  } catch (error) { say(error.message, true); }
}

export async function grant(collection, user, role) {
  try {
    if (role) await call('PUT', path('collections', collection, 'members', user), { role });
    else await call('DELETE', path('collections', collection, 'members', user));
    say(role ? `${user} has ${role} access` : `${user} removed`);
  } catch (error) { say(error.message, true); }
  showMembers(collection);
}


export async function showDevices(onOwnRevoked) {
  const tbody = document.querySelector('#devices tbody');
  const turn = begin('devices');
  try {
    const { devices } = await call('GET', '/api/tokens');
    if (stale('devices', turn)) return;
    const rows = [];
    for (const d of devices) {
      const tr = element('tr', undefined, { 'data-device': d.id });
      const actions = element('td');
      actions.append(actionButton('Revoke', `Revoke ${d.label || d.id}`, async () => {
        try {
          await call('DELETE', path('tokens', d.id));
          say(`revoked ${d.label || d.id}`);
          if (d.this) onOwnRevoked(); else showDevices(onOwnRevoked);
        } catch (error) { say(error.message, true); }
      }, 'danger'));
      tr.append(element('td', (d.label || '(no label)') + (d.this ? ' (this browser)' : '')),
        element('td', d.ends_with_browser ? 'until the browser closes' : 'kept signed in', { class: 'signed-in' }), element('td', d.id),
        element('td', when(d.created)), element('td', when(d.last_used)), actions);
      rows.push(tr);
    }
    tbody.replaceChildren(...rows);
  } catch (error) { say(error.message, true); }
}

const statusNames = {
  connections: 'Connections', subscribers: 'Subscriptions', collections: 'Collections', seq: 'Last seq',
  changes_per_second: 'Changes per second', queued_writes: 'Writes waiting', commits: 'Commits',
  store_bytes: 'Store size (bytes)', uptime_seconds: 'Uptime (s)',
};

export async function showStatus() {
  const list = document.querySelector('#status');
  try {
    const status = await call('GET', '/api/status');
    list.replaceChildren();
    for (const [key, name] of Object.entries(statusNames)) {
      list.append(element('dt', name), element('dd', String(status[key] ?? '—'), { 'data-key': key }));
    }
  } catch (error) { say(error.message, true); }
}
