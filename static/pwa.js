// Loaded by every page (CSP allows no inline script). While this browser is subscribed to web push (the
// service worker is registered by the notification settings when the person opts in), it tells the daemon
// when the page is shown, so the daemon does not push what the person sees here anyway.
const REPORT_MS = 30_000;

async function report(visible) {
  const reg = await navigator.serviceWorker.getRegistration("/");
  const sub = reg && await reg.pushManager.getSubscription();
  if (!sub) return;
  const token = localStorage.getItem("lvmh.token");
  await fetch("/api/push/visible", {
    method: "POST",
    credentials: "same-origin",
    keepalive: true,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ endpoint: sub.endpoint, visible }),
  });
}

if ("serviceWorker" in navigator && window.isSecureContext) {
  const tick = () => report(document.visibilityState === "visible").catch(() => {});
  document.addEventListener("visibilitychange", tick);
  setInterval(() => document.visibilityState === "visible" && tick(), REPORT_MS);
  tick();
}
