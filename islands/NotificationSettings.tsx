/**
 * Notifications on this browser: opt in (permission, the service worker, a push subscription sent to the
 * daemon), pick the kinds wanted, or turn them off. Over plain http on another host, browsers offer no push;
 * the panel says so (only the in-page notifications of an open session page work there).
 */
import { useEffect, useState } from "preact/hooks";
import { ApiError, errorText } from "../ui/api.ts";
import { useAction } from "../ui/use_action.ts";
import { pushKey, pushKinds, removePushSubscription, savePushSubscription } from "../ui/rest.ts";
import type { PushSubscribeBody } from "../lib/protocol.ts";
import type { NotifyKind } from "../lib/notify/kinds.ts";

interface Props {
  /** Every kind, in display order, with its label. */
  kinds: { kind: NotifyKind; label: string }[];
  /** What a new subscription starts with. */
  defaults: NotifyKind[];
}

type Status = "checking" | "unsupported" | "off" | "on" | "denied";

const SW = "/static/sw.js";
const SCOPE = "/";

function keyBytes(base64url: string): Uint8Array<ArrayBuffer> {
  const b64 = base64url.replace(/-/g, "+").replace(/_/g, "/");
  const raw = atob(b64 + "=".repeat((4 - b64.length % 4) % 4));
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

/** Resolve once the registration has an active worker (a page outside its scope never gets `ready`). */
function active(reg: ServiceWorkerRegistration): Promise<ServiceWorkerRegistration> {
  const worker = reg.installing ?? reg.waiting;
  if (reg.active || !worker) return Promise.resolve(reg);
  return new Promise((resolve) => {
    worker.addEventListener("statechange", () => worker.state === "activated" && resolve(reg));
  });
}

/** The daemon's answer as `errorText` words it; anything else here is the browser's push service failing. */
function messageOf(e: unknown): string {
  if (e instanceof ApiError) return errorText(e);
  return `This browser could not subscribe to its push service (${errorText(e)}). Notifications still show ` +
    "while a session page is open.";
}

export default function NotificationSettings({ kinds, defaults }: Props) {
  const [status, setStatus] = useState<Status>("checking");
  const [chosen, setChosen] = useState<NotifyKind[]>(defaults);
  const [ready, setReady] = useState(false);
  const { busy, error, setError, run } = useAction(undefined, messageOf);

  useEffect(() => {
    void (async () => {
      try {
        if (
          !("serviceWorker" in navigator) || !("PushManager" in globalThis) || !globalThis.isSecureContext
        ) {
          setStatus("unsupported");
          return;
        }
        if (Notification.permission === "denied") return setStatus("denied");
        const reg = await navigator.serviceWorker.getRegistration(SCOPE);
        const sub = await reg?.pushManager.getSubscription();
        if (!sub) return setStatus("off");
        const got = await pushKinds(sub.endpoint);
        if (got.kinds) setChosen(got.kinds);
        setStatus(got.kinds ? "on" : "off");
      } catch (e) {
        setError(messageOf(e));
        setStatus("off");
      } finally {
        setReady(true);
      }
    })();
  }, []);

  async function save(sub: PushSubscription, kinds: NotifyKind[]) {
    // A push subscription's JSON always has both; its DOM type leaves them optional.
    const { endpoint, keys } = sub.toJSON() as PushSubscribeBody["subscription"];
    await savePushSubscription({
      subscription: { endpoint, keys: { p256dh: keys.p256dh, auth: keys.auth } },
      kinds,
    });
  }

  const enable = () =>
    run(async () => {
      const permission = await Notification.requestPermission();
      if (permission !== "granted") return setStatus(permission === "denied" ? "denied" : "off");
      const reg = await active(await navigator.serviceWorker.register(SW, { scope: SCOPE }));
      const { publicKey } = await pushKey();
      const sub = await reg.pushManager.subscribe({
        userVisibleOnly: true,
        applicationServerKey: keyBytes(publicKey),
      });
      await save(sub, chosen);
      setStatus("on");
    });

  const disable = () =>
    run(async () => {
      const reg = await navigator.serviceWorker.getRegistration(SCOPE);
      const sub = await reg?.pushManager.getSubscription();
      if (sub) {
        await removePushSubscription(sub.endpoint).catch(() => {});
        await sub.unsubscribe();
      }
      setStatus("off");
    });

  const toggle = (kind: NotifyKind) =>
    run(async () => {
      const list = chosen.includes(kind) ? chosen.filter((k) => k !== kind) : [...chosen, kind];
      setChosen(list);
      if (status !== "on") return;
      const reg = await navigator.serviceWorker.getRegistration(SCOPE);
      const sub = await reg?.pushManager.getSubscription();
      if (sub) await save(sub, list);
    });

  return (
    <section class="notify-settings" data-ready={ready ? "1" : undefined} data-status={status}>
      <h2>Notifications on this browser</h2>
      {status === "unsupported"
        ? (
          <p class="notify-note">
            This page is not served over HTTPS (or localhost), so the browser offers no push. Put lvmh behind
            TLS (see the README) to be called back on this device; until then, notifications show only while a
            session page is open.
          </p>
        )
        : status === "denied"
        ? <p class="notify-note">Notifications are blocked for this site in the browser's settings.</p>
        : (
          <p>
            {status === "on"
              ? <button type="button" disabled={busy} onClick={disable}>Turn off</button>
              : (
                <button type="button" disabled={busy || status === "checking"} onClick={enable}>
                  Notify me on this browser
                </button>
              )}
          </p>
        )}
      <fieldset disabled={busy || status === "unsupported"}>
        <legend>Tell me when</legend>
        {kinds.map(({ kind, label }) => (
          <label key={kind}>
            <input type="checkbox" checked={chosen.includes(kind)} onChange={() => toggle(kind)} /> {label}
          </label>
        ))}
      </fieldset>
      {error && <p class="error" role="alert">{error}</p>}
    </section>
  );
}
