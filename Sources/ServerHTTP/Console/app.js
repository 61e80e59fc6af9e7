// The console's start: log in, pick a view, keep the collection picked across views.
import { call, OfflineError, reachability, session } from './api.js';
import { say } from './dom.js';
import { showCollection, currentCollection, addRecord, addField, fillRecordForm } from './records.js';
import { forgetAll, pendingCount } from './replica.js';
import { loadCollections, createCollection, renameCollection, dropCollection } from './collections.js';
import { showConflicts, showMembers, showDevices, showStatus, grant } from './views.js';
import { showActivity } from './activity.js';
import { showUsers, addUser, changePassword, showInvitations, makeInvitation, copyInvitation, showJoin } from './team.js';

const $ = (selector) => document.querySelector(selector);
const views = ['login', 'join', 'records', 'activity', 'conflicts', 'members', 'devices', 'users', 'status'];
let refreshTimer = null;

function show(view) {
  for (const name of views) $(`#${name}-view`).hidden = name !== view;
  for (const link of document.querySelectorAll('nav a')) link.classList.toggle('current', link.dataset.view === view);
  clearInterval(refreshTimer);
  const collection = currentCollection();
  if (view === 'conflicts') showConflicts(collection);
  if (view === 'activity') {
    for (const e of document.querySelectorAll('.collection-name')) e.textContent = collection || '';
    showActivity(collection);
  }
  if (view === 'members') {
    showMembers(collection);
    // The inviter sees an invitation used, and its new member, within seconds (the members'
    // role pickers are drawn again only then, never under an open one for nothing).
    let seen = null;
    const refresh = async () => {
      const state = await showInvitations(collection);
      if (seen !== null && state !== seen) showMembers(collection);
      seen = state;
    };
    refresh();
    refreshTimer = setInterval(refresh, 2000);
  }
  if (view === 'devices') showDevices(loggedOut);
  if (view === 'users') showUsers();
  if (view === 'status') { showStatus(); refreshTimer = setInterval(showStatus, 2000); }
}

const onJoinPage = () => location.pathname === '/join';

function route() {
  if (onJoinPage()) return;
  const view = location.hash.slice(1) || 'records';
  show(views.includes(view) && view !== 'login' && view !== 'join' ? view : 'records');
}

async function loggedIn(me) {
  // What the device kept belongs to the person who last logged in here: another one starts clean.
  const owner = localStorage.getItem('owner');
  if (owner && owner !== me.user) await forgetAll().catch(() => undefined);
  localStorage.setItem('owner', me.user);
  localStorage.setItem('user', me.user);
  $('#who').textContent = me.user;
  if (me.admin !== undefined) $('#users-link').hidden = !me.admin;
  $('#nav').hidden = false;
  $('#account').hidden = false;
  route();
  await loadCollections();
}

// Logged out, or the session ended (expired, revoked). Logging out forgets what this device
// kept; a session that ended keeps it, edits waiting included, for the same person's next login.
function loggedOut({ forget = false } = {}) {
  localStorage.removeItem('user');
  if (forget) { localStorage.removeItem('owner'); forgetAll().catch(() => undefined); }
  showCollection(null);
  $('#nav').hidden = true;
  $('#account').hidden = true;
  show('login');
  $('#login-user').focus();
}

$('#login-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  try {
    await call('POST', '/api/login', { user: $('#login-user').value, password: $('#login-password').value, keep: $('#login-keep').checked });
    $('#login-password').value = '';
    say('');
    await loggedIn(await call('GET', '/api/me'));
  } catch (error) { say(error.message, true); }
});

$('#logout').addEventListener('click', async () => {
  const waiting = await pendingCount().catch(() => 0);
  if (waiting && !confirm(`${waiting} edit${waiting === 1 ? '' : 's'} made here ha${waiting === 1 ? 's' : 've'} not reached the server; logging out discards ${waiting === 1 ? 'it' : 'them'}. Log out?`)) return;
  try { await call('POST', '/api/logout'); } catch (error) { /* the token is gone either way */ }
  say('logged out');
  loggedOut({ forget: true });
});

$('#activity-filter').addEventListener('change', () => showActivity(currentCollection()));

$('#collection').addEventListener('change', (e) => {
  localStorage.setItem('collection', e.target.value);
  $('#activity-filter').replaceChildren(new Option('everyone', ''));
  showCollection(e.target.value);
  route();
});

// An inline form: `open` prepares it (returns false to stay closed), `submit` acts on it and
// returns whether to close it.
function inlineForm(formSelector, openSelector, submit, open = () => true) {
  const form = $(formSelector);
  $(openSelector).addEventListener('click', () => {
    if (open(form) === false) return;
    form.hidden = false;
    form.querySelector('input').focus();
  });
  form.querySelector('[data-cancel]').addEventListener('click', () => { form.hidden = true; });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if ((await submit(form)) === false) return;
    form.hidden = true;
    form.reset();
  });
}

let readRecordForm = () => new Map();
inlineForm('#new-record', '#add-record', async () => {
  let fields;
  try { fields = readRecordForm(); } catch (error) { say(error.message, true); return false; }
  return addRecord($('#new-record-id').value, fields);
}, () => { readRecordForm = fillRecordForm($('#new-record-fields')); });
inlineForm('#new-field', '#add-field', () => addField($('#new-field-name').value, $('#new-field-type').value));
inlineForm('#new-collection', '#create-collection', () => createCollection($('#new-collection-name').value));
inlineForm('#rename-collection', '#rename-collection-button', () => renameCollection(currentCollection(), $('#rename-collection-to').value),
  () => { if (!currentCollection()) return false; $('#rename-collection-to').value = currentCollection(); });
$('#drop-collection').addEventListener('click', () => { if (currentCollection()) dropCollection(currentCollection()); });

$('#grant-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  await grant(currentCollection(), $('#grant-user').value, $('#grant-role').value);
  e.target.reset();
});

inlineFormSubmit('#password-form', () => changePassword($('#password-old').value, $('#password-new').value, $('#password-again').value));
inlineFormSubmit('#add-user', () => addUser($('#add-user-name').value, $('#add-user-password').value, $('#add-user-admin').checked));
inlineFormSubmit('#invite-form', () => makeInvitation(currentCollection(), $('#invite-role').value, Number($('#invite-days').value),
  Number($('#invite-uses').value), $('#invite-note').value));
$('#copy-invitation').addEventListener('click', copyInvitation);

// A form that stays open: `submit` acts on it and returns whether to clear it.
function inlineFormSubmit(formSelector, submit) {
  $(formSelector).addEventListener('submit', async (e) => {
    e.preventDefault();
    if (await submit()) e.target.reset();
  });
}

window.addEventListener('hashchange', route);

// Offline: a banner says so (api.js asks the server again every few seconds until it answers).
// Started with no network (from the home screen, in a tunnel) the shell shows with the banner
// and logs in once the server answers.
let started = false;
reachability.addEventListener('change', (e) => {
  $('#offline').hidden = e.detail;
  if (e.detail && !started) start();
  // The activity is read from the server only: it comes back with it.
  if (e.detail && started && !$('#activity-view').hidden) showActivity(currentCollection());
});

// The session ended while the console was open (the device revoked, the password changed, the
// login expired): a login is asked for; what this device kept, edits waiting included, stays for
// the same person.
session.addEventListener('ended', () => {
  if (!started || $('#nav').hidden) return;
  loggedOut();
  say('Your session ended: log in again (edits made here are kept and sent after the login).', true);
});

// An invitation's link: the join page, then the invited collection once joined.
function startJoin() {
  started = true;
  const secret = new URLSearchParams(location.hash.slice(1)).get('s') || '';
  show('join');
  showJoin(secret, async (done) => {
    localStorage.setItem('collection', done.collection);
    history.replaceState(null, '', '/#records');
    say(`You joined ${done.collection} with ${done.role} access.`);
    await loggedIn(await call('GET', '/api/me'));
  });
}

// With no network, whoever last logged in here sees what this device kept (the session
// cookie is checked once the server answers).
function start() {
  if (onJoinPage()) return startJoin();
  call('GET', '/api/me').then((me) => { started = true; return loggedIn(me); }, (error) => {
    if (!(error instanceof OfflineError)) { started = true; loggedOut(); return; }
    const user = localStorage.getItem('user');
    if (user && $('#nav').hidden) loggedIn({ user }).catch(() => undefined);
  });
}

if ('serviceWorker' in navigator) {
  // Not on an insecure origin (plain HTTP other than localhost): the console works without it.
  navigator.serviceWorker.register('/sw.js').catch(() => undefined);
}
start();
