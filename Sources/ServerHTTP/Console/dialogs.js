// The records view's dialogs: a stale edit's conflict, and a record's history.
import { callTyped, path } from './api.js';
import { plain, member, display, changedFields } from './values.js';
import { element, button, say } from './dom.js';

// Every field the other person changed since this edit began, with the edited field's two
// values side by side; resolves to 'mine' or 'theirs'.
export function askConflict(id, field, mine, base, theirs, deleted) {
  const dialog = document.querySelector('#conflict-dialog');
  document.querySelector('#conflict-field').textContent = field;
  document.querySelector('#conflict-record').textContent = id;
  document.querySelector('#conflict-mine').textContent = display(mine);
  document.querySelector('#conflict-theirs').textContent = deleted ? '(deleted)' : display(theirs.get(field));
  const others = deleted ? [] : changedFields(base, theirs).filter((name) => name !== field);
  const list = document.querySelector('#conflict-others');
  list.replaceChildren(...others.map((name) => {
    const item = element('li', undefined, { 'data-field': name });
    item.append(element('strong', name), `: ${display(base.get(name))} → ${display(theirs.get(name))}`);
    return item;
  }));
  document.querySelector('#conflict-others-box').hidden = others.length === 0;
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue), { once: true });
    dialog.showModal();
  });
}

// ` by bob (bob's laptop, agent)`, or nothing for a version from before the change log.
function replacedBy(by) {
  const user = by && plain(member(by, 'user'));
  if (!user || user === '-') return '';
  const device = plain(member(by, 'device'));
  const label = plain(member(by, 'label')) || (device === 'password' ? 'password login' : device);
  return ` by ${user} (${label}, ${plain(member(by, 'via'))})`;
}

// The record's earlier versions (the server keeps each set of fields a PUT or DEL replaced),
// newest first; restoring one writes its fields at the record's current rev (`put`).
export async function showHistory(collection, id, currentRev, put) {
  const dialog = document.querySelector('#history-dialog');
  const list = document.querySelector('#history-versions');
  document.querySelector('#history-record').textContent = id;
  const result = await callTyped('GET', path('collections', collection, 'records', id, 'versions'));
  if (!result.ok) { say(result.json?.message || 'cannot read the versions', true); return; }
  const versions = member(result.value, 'versions').items;
  list.replaceChildren(...versions.map((version) => {
    const rev = plain(member(version, 'rev'));
    const fields = member(version, 'fields').entries;
    const item = element('li', undefined, { 'data-rev': rev });
    item.append(element('h3', `rev ${rev}, replaced ${plain(member(version, 'replaced')).replace('T', ' ').replace('Z', ' UTC')}${replacedBy(member(version, 'replaced_by'))}`),
      element('pre', [...fields].map(([k, v]) => `${k}: ${display(v)}`).join('\n')),
      button('Restore', `Restore rev ${rev} of ${id}`, async () => {
        const back = await put(fields, currentRev);
        dialog.close();
        if (back.ok) say(`restored rev ${rev} of ${id}`);
        else say(back.json?.message || `could not restore ${id}`, true);
      }));
    return item;
  }));
  if (versions.length === 0) list.append(element('li', 'No earlier versions are kept.'));
  dialog.showModal();
}

