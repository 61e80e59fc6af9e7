// Bringing a team in: accounts (server admins), one's own password, invitations to a
// collection (with a QR code of the link), and the page an invitation's link opens.
import { call, path } from './api.js';
import { element, button as actionButton, say } from './dom.js';
import { qrSVG } from './qr.js';

const $ = (selector) => document.querySelector(selector);

// 2026-12-02T05:25:00Z as 2026-12-02 05:25 UTC.
export function when(time) {
  return time ? time.replace('T', ' ').replace(/:\d\dZ$/, ' UTC') : '—';
}

export async function showUsers() {
  const tbody = $('#users tbody');
  try {
    const { users } = await call('GET', '/api/users');
    tbody.replaceChildren(...users.map((user) => {
      const tr = element('tr', undefined, { 'data-user': user.name });
      const admin = element('input', undefined, { type: 'checkbox', 'aria-label': `${user.name} is a server admin` });
      admin.checked = user.admin;
      admin.addEventListener('change', () => changeUser(user.name, { admin: admin.checked }, admin.checked ? `${user.name} is a server admin` : `${user.name} is no longer a server admin`));
      const adminCell = element('td');
      adminCell.append(admin);
      const actions = element('td', undefined, { class: 'actions' });
      actions.append(
        actionButton('Reset password', `Reset the password of ${user.name}`, () => {
          const password = prompt(`New password for ${user.name} (their devices are logged out):`);
          if (password) changeUser(user.name, { password }, `set a new password for ${user.name}; their devices are logged out`);
        }),
        actionButton('Remove', `Remove ${user.name}`, async () => {
          if (!confirm(`Remove ${user.name}? Their devices are logged out and their access to every collection ends.`)) return;
          try {
            await call('DELETE', path('users', user.name));
            say(`removed ${user.name}`);
          } catch (error) { say(error.message, true); }
          showUsers();
        }, 'danger'));
      tr.append(element('td', user.name), adminCell, actions);
      return tr;
    }));
  } catch (error) { say(error.message, true); }
}

async function changeUser(name, change, done) {
  try {
    await call('PATCH', path('users', name), change);
    say(done);
  } catch (error) { say(error.message, true); }
  showUsers();
}

export async function addUser(name, password, admin) {
  try {
    await call('POST', '/api/users', { name, password, admin });
    say(`added ${name}`);
    showUsers();
    return true;
  } catch (error) { say(error.message, true); return false; }
}

export async function changePassword(old, fresh, again) {
  if (fresh !== again) { say('the new passwords differ', true); return false; }
  try {
    await call('POST', '/api/password', { old, new: fresh });
    say('password changed; your other devices are logged out');
    return true;
  } catch (error) { say(error.message, true); return false; }
}

// The collection's open invitations; hidden for someone who may not see them (not its admin).
// The table is drawn again only when it changed (so a button is not replaced under a click);
// resolves to a text that changes whenever an invitation is used, made or revoked.
let drawn = '';
export async function showInvitations(collection) {
  const box = $('#invitations-box');
  if (!collection) { box.hidden = true; return ''; }
  try {
    const { invitations } = await call('GET', path('collections', collection, 'invitations'));
    box.hidden = false;
    const state = collection + JSON.stringify(invitations);
    if (state === drawn) return state;
    drawn = state;
    $('#invitations tbody').replaceChildren(...invitations.map((invitation) => {
      const tr = element('tr', undefined, { 'data-invitation': invitation.id });
      const actions = element('td', undefined, { class: 'actions' });
      actions.append(actionButton('Revoke', `Revoke invitation ${invitation.id}`, async () => {
        try {
          await call('DELETE', path('collections', collection, 'invitations', invitation.id));
          say(`revoked invitation ${invitation.id}; the devices it signed in are logged out`);
        } catch (error) { say(error.message, true); }
        showInvitations(collection);
      }, 'danger'));
      tr.append(element('td', invitation.id), element('td', invitation.role), element('td', `${invitation.uses} of ${invitation.allowed}`, { class: 'uses' }),
        element('td', when(invitation.expires)), element('td', invitation.note), element('td', invitation.made_by), actions);
      return tr;
    }));
    return state;
  } catch (error) {
    box.hidden = true;
    drawn = '';
    if (error.status !== 403) say(error.message, true);
    return '';
  }
}

export async function makeInvitation(collection, role, days, uses, note) {
  try {
    const made = await call('POST', path('collections', collection, 'invitations'), { role, expires_days: days, uses, note: note || undefined });
    $('#invitation-link').value = made.link;
    $('#invitation-what').textContent = `${role} access to ${collection}, ${uses === 1 ? 'once' : `${uses} times`}, until ${when(made.expires)}`;
    $('#invitation-qr').replaceChildren(qrSVG(made.link));
    $('#invitation-trust').textContent = made.link.includes('&f=')
      ? "The link carries the server's certificate fingerprint: the invitee's client checks it, with nothing to compare by hand."
      : 'This server does not use TLS: send the link only over a channel you trust, for use on a network you trust.';
    $('#invitation-made').hidden = false;
    say(`invitation ${made.id} made`);
    showInvitations(collection);
    return true;
  } catch (error) { say(error.message, true); return false; }
}

export async function copyInvitation() {
  const link = $('#invitation-link');
  try {
    await navigator.clipboard.writeText(link.value);
    say('link copied');
  } catch {
    link.select();
    say('select the link and copy it (the browser did not allow it here)');
  }
}

// The page an invitation's link opens: what it invites to, then a new account or a login.
// `secret` is read from the link's #fragment, which never reaches the server's logs.
export async function showJoin(secret, joined) {
  $('#join-summary').textContent = 'Reading the invitation…';
  let invitation;
  try {
    invitation = await call('POST', '/api/invitation', { secret });
  } catch (error) {
    $('#join-summary').textContent = error.status === 410 || error.body?.error === 'EXPIRED' ? error.message
      : 'This invitation link does not work: it was revoked, or it is not whole. Ask for a new one.';
    $('#join-forms').hidden = true;
    return;
  }
  $('#join-summary').textContent = `${invitation.made_by} invites you to ${invitation.collection}, with ${invitation.role} access (until ${when(invitation.expires)}).`;
  $('#join-note').textContent = invitation.note;
  $('#join-note').hidden = !invitation.note;
  $('#join-new').hidden = !invitation.makes_accounts;
  $('#join-forms').hidden = false;
  const redeem = (isNew) => async (e) => {
    e.preventDefault();
    const form = isNew ? 'new' : 'existing';
    try {
      const done = await call('POST', '/api/join', {
        secret, user: $(`#join-${form}-user`).value, password: $(`#join-${form}-password`).value, new: isNew, keep: $(`#join-${form}-keep`).checked,
      });
      $(`#join-${form}-password`).value = '';
      joined(done);
    } catch (error) { say(error.message, true); }
  };
  $('#join-new').onsubmit = redeem(true);
  $('#join-existing').onsubmit = redeem(false);
}
