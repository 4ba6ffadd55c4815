// lvmh's service worker (served from /static/ with Service-Worker-Allowed: /, registered for scope /): shows web pushes as notifications and opens the session on click.
// Plain JS served as is (no bundle step): it runs in the worker global scope, not in pages.
/* global self, clients */

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("push", (event) => {
  let msg;
  try {
    msg = event.data ? event.data.json() : {};
  } catch {
    msg = { title: "lvmh", body: event.data ? event.data.text() : "" };
  }
  const data = msg.data || {};
  event.waitUntil(
    self.registration.showNotification(msg.title || "lvmh", {
      body: msg.body || "",
      // One notification per session and kind: a newer one replaces the older, and still alerts.
      tag: msg.tag || undefined,
      renotify: Boolean(msg.tag),
      data,
      icon: "/static/icon-192.png",
      badge: "/static/icon-192.png",
      // An approval blocks the agent: keep it on screen until the person acts.
      requireInteraction: data.type === "approval.requested",
    }),
  );
});

/**
 * Focus a window already on the target URL, else send one of ours there, else open one.
 * @returns the window client that shows the target (null when the browser refused to open one).
 */
async function open(data) {
  const target = new URL((data && data.url) || "/", self.location.origin).href;
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  const focus = (w) => w.focus().catch(() => w);
  const same = windows.find((w) => w.url === target);
  if (same) return focus(same);
  // Only pages this worker controls can be navigated; the others stay as they are.
  for (const w of windows) {
    if (!w.url.startsWith(self.location.origin + "/")) continue;
    const moved = await w.navigate(target).catch(() => null);
    if (moved) return focus(moved);
  }
  return self.clients.openWindow(target);
}

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  event.waitUntil(open(event.notification.data));
});
