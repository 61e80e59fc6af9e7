// The console's start: log in, pick a view, keep the collection picked across views.
import { call } from './api.js';
import { showCollection, currentCollection, addRecord, addField } from './records.js';
import { showConflicts, showMembers, showDevices, showStatus, grant } from './views.js';

const $ = (selector) => document.querySelector(selector);
const views = ['login', 'records', 'conflicts', 'members', 'devices', 'status'];
let statusTimer = null;

export function say(text, isError = false) {
  const message = $('#message');
  message.textContent = text;
  message.classList.toggle('error', isError);
}

function show(view) {
  for (const name of views) $(`#${name}-view`).hidden = name !== view;
  for (const link of document.querySelectorAll('nav a')) link.classList.toggle('current', link.dataset.view === view);
  clearInterval(statusTimer);
  const collection = currentCollection();
  if (view === 'conflicts') showConflicts(collection);
  if (view === 'members') showMembers(collection);
  if (view === 'devices') showDevices(loggedOut);
  if (view === 'status') { showStatus(); statusTimer = setInterval(showStatus, 2000); }
}

function route() {
  const view = location.hash.slice(1) || 'records';
  show(views.includes(view) && view !== 'login' ? view : 'records');
}

async function loadCollections() {
  const select = $('#collection');
  const { collections } = await call('GET', '/api/collections');
  const wanted = localStorage.getItem('collection');
  select.replaceChildren(...collections.map((c) => new Option(`${c.name} (${c.role})`, c.name)));
  if (collections.some((c) => c.name === wanted)) select.value = wanted;
  showCollection(select.value || null);
  if (collections.length === 0) say('No collections yet: create one with `plistsync` or the API.');
}

async function loggedIn(me) {
  $('#who').textContent = me.user;
  $('#nav').hidden = false;
  $('#account').hidden = false;
  route();
  await loadCollections();
}

function loggedOut() {
  showCollection(null);
  $('#nav').hidden = true;
  $('#account').hidden = true;
  show('login');
  $('#login-user').focus();
}

$('#login-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  try {
    await call('POST', '/api/login', { user: $('#login-user').value, password: $('#login-password').value });
    $('#login-password').value = '';
    say('');
    await loggedIn(await call('GET', '/api/me'));
  } catch (error) { say(error.message, true); }
});

$('#logout').addEventListener('click', async () => {
  try { await call('POST', '/api/logout'); } catch (error) { /* the token is gone either way */ }
  say('logged out');
  loggedOut();
});

$('#collection').addEventListener('change', (e) => {
  localStorage.setItem('collection', e.target.value);
  showCollection(e.target.value);
  route();
});

function inlineForm(formSelector, openSelector, submit) {
  const form = $(formSelector);
  $(openSelector).addEventListener('click', () => { form.hidden = false; form.querySelector('input').focus(); });
  form.querySelector('[data-cancel]').addEventListener('click', () => { form.hidden = true; });
  form.addEventListener('submit', async (e) => { e.preventDefault(); await submit(form); form.hidden = true; form.reset(); });
}
inlineForm('#new-record', '#add-record', () => addRecord($('#new-record-id').value));
inlineForm('#new-field', '#add-field', () => addField($('#new-field-name').value, $('#new-field-type').value));

$('#grant-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  await grant(currentCollection(), $('#grant-user').value, $('#grant-role').value);
  e.target.reset();
});

window.addEventListener('hashchange', route);

call('GET', '/api/me').then(loggedIn, loggedOut);
