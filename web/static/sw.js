// sw.js: the web client's service worker. It shows the notifications (Chrome
// for Android lets only a service worker show one), opens the conversation
// a notification names when it is tapped, shows what the relay pushes
// (Web Push: a question opened, a turn ended) while no page of this device
// is open, and keeps the page's own files for an instant start: each is
// served from the cache and fetched again behind it, so the next start has
// the relay's current files. Nothing else (the socket, /healthz) passes
// through it.

const CACHE = 'pilotdesk-files-v1';
const FILES = [
  './', 'app.css', 'icon.svg', 'icon-192.png', 'manifest.webmanifest',
  'js/main.js', 'js/app.js', 'js/composer.js', 'js/connection.js', 'js/conversation.js', 'js/dom.js',
  'js/drawer.js', 'js/entries.js', 'js/folders.js', 'js/identity.js', 'js/ids.js', 'js/indicator.js',
  'js/list.js', 'js/login.js', 'js/markdown.js', 'js/notify.js', 'js/question.js', 'js/route.js',
  'js/status.js', 'js/storage.js', 'js/token.js', 'js/transcript.js', 'js/words.js',
];
const scope = new URL(self.registration.scope);
const cached = new Set(FILES.map((f) => new URL(f, scope).pathname));

self.addEventListener('install', (ev) => {
  // A file missing from this relay's build fails nothing: it is fetched
  // when the page asks for it.
  ev.waitUntil(caches.open(CACHE).then((c) => Promise.all(FILES.map((f) => c.add(new URL(f, scope)).catch(() => {}))))
    .then(() => self.skipWaiting()));
});

self.addEventListener('activate', (ev) => {
  ev.waitUntil(caches.keys()
    .then((keys) => Promise.all(keys.filter((k) => k !== CACHE).map((k) => caches.delete(k))))
    .then(() => self.clients.claim()));
});

self.addEventListener('fetch', (ev) => {
  const req = ev.request;
  const url = new URL(req.url);
  if (req.method !== 'GET' || url.origin !== scope.origin || !cached.has(url.pathname)) return;
  const key = new URL(url.pathname, scope).href; // the fragment and query aside
  ev.respondWith(caches.open(CACHE).then(async (c) => {
    const fresh = fetch(req).then((res) => {
      if (res.ok) c.put(key, res.clone());
      return res;
    });
    const hit = await c.match(key);
    if (hit) {
      ev.waitUntil(fresh.catch(() => {}));
      return hit;
    }
    return fresh;
  }));
});

// A push from the relay: {title, body, conversationId, tag}. It carries
// the conversation's text only when the user asked for it.
self.addEventListener('push', (ev) => {
  let d = {};
  try {
    d = ev.data ? ev.data.json() : {};
  } catch {
    d = { body: ev.data ? ev.data.text() : '' };
  }
  ev.waitUntil(show(d));
});

function show(d) {
  const id = typeof d.conversationId === 'string' ? d.conversationId : '';
  return self.registration.showNotification(d.title || 'pilotdesk', {
    body: d.body || '',
    tag: d.tag || (id ? `c-${id}` : 'pilotdesk'),
    icon: new URL('icon-192.png', scope).href,
    data: { conversationId: id },
  });
}

// The page asks for a notification through here (a page may not show one
// itself on some phones).
self.addEventListener('message', (ev) => {
  if (ev.data && ev.data.notify) ev.waitUntil(show(ev.data.notify));
});

// A tap opens the conversation: in a page of this app already open (told
// by a message), else in a new one at the conversation's link.
self.addEventListener('notificationclick', (ev) => {
  ev.notification.close();
  const id = ev.notification.data && ev.notification.data.conversationId;
  const link = new URL(id ? `./#/c/${encodeURIComponent(id)}` : './', scope).href;
  ev.waitUntil(self.clients.matchAll({ type: 'window', includeUncontrolled: true }).then((pages) => {
    const page = pages[0];
    if (page) {
      page.postMessage({ open: id });
      return page.focus();
    }
    return self.clients.openWindow(link);
  }));
});
