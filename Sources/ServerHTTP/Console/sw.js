// The console's service worker: keeps the shell (the page, its modules, style, manifest and
// icons) so the console opens with no network, as an installed app does. Each shell file is
// answered from the cache at once and refreshed from the server behind it (the next start gets
// the new version); the API is never touched here: its requests, the event stream among them,
// go to the network as they would without a worker.
const CACHE = 'plistsync-shell-4';
const SHELL = ['/', '/style.css', '/app.js', '/api.js', '/values.js', '/records.js', '/columns.js', '/dialogs.js',
  '/collections.js', '/views.js', '/dom.js', '/merge.js', '/replica.js', '/outbox.js', '/synced.js', '/team.js', '/qr.js', '/activity.js', '/sdk/plistsync.js',
  '/manifest.webmanifest', '/icon-192.png', '/icon-512.png'];

self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(SHELL)).then(() => self.skipWaiting()));
});

self.addEventListener('activate', (event) => {
  event.waitUntil(caches.keys()
    .then((names) => Promise.all(names.filter((name) => name !== CACHE).map((name) => caches.delete(name))))
    .then(() => self.clients.claim()));
});

self.addEventListener('fetch', (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== 'GET' || url.origin !== self.location.origin || url.pathname.startsWith('/api/') || url.pathname === '/sw.js') return;
  // The console's address (with any #view) is the shell's page; another of its files opened as
  // a page (the script client's module, say) is that file.
  const key = url.pathname === '/index.html' || url.pathname === '/join' ? '/' : url.pathname;
  event.respondWith(caches.open(CACHE).then(async (cache) => {
    const cached = await cache.match(key);
    const refreshed = fetch(event.request).then((response) => {
      if (response.ok) cache.put(key, response.clone());
      return response;
    });
    if (cached) {
      event.waitUntil(refreshed.catch(() => undefined));
      return cached;
    }
    return refreshed;
  }));
});
