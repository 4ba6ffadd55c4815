/** The live part of the top bar: the connection indicator (fed by the page's socket owner) and sign-out. */
import { useEffect, useState } from "preact/hooks";
import { signOut } from "../lib/ui/api.ts";
import type { SocketStatus } from "../lib/ui/live_socket.ts";
import { requestRetry, subscribeStatus } from "../lib/ui/status_bus.ts";

function label(status: SocketStatus | null): string {
  switch (status?.state) {
    case "open":
      return "Live";
    case "retrying":
      return "Reconnecting";
    case "closed":
      return "Disconnected";
    default:
      return "Connecting…";
  }
}

export default function TopBarControls() {
  const [status, setStatus] = useState<SocketStatus | null>(null);
  const [retryAt, setRetryAt] = useState(0);
  const [, setTick] = useState(0);
  useEffect(
    () =>
      subscribeStatus((s) => {
        setStatus(s);
        setRetryAt(s.state === "retrying" ? Date.now() + (s.retryInMs ?? 0) : 0);
      }),
    [],
  );
  // Count down to the next attempt, so a long backoff does not look like a hang.
  useEffect(() => {
    if (!retryAt) return;
    const timer = setInterval(() => setTick((n) => n + 1), 1000);
    return () => clearInterval(timer);
  }, [retryAt]);
  const state = status?.state ?? "connecting";
  // Only ever non-zero in the browser (the server renders "connecting"), so reading the clock here is safe.
  const seconds = retryAt ? Math.max(0, Math.ceil((retryAt - Date.now()) / 1000)) : 0;
  return (
    <div class="topbar-controls">
      <span class={`conn conn-${state}`} data-conn={state} role="status" aria-live="polite">
        <span class="dot" aria-hidden="true"></span>
        <span class="conn-label">
          {label(status)}
          {state === "retrying" && <span aria-hidden="true">{seconds > 0 ? ` in ${seconds} s` : "…"}</span>}
        </span>
        {state === "retrying" && <button type="button" class="link" onClick={requestRetry}>retry now</button>}
      </span>
      <button
        type="button"
        class="ghost small"
        onClick={async () => {
          await signOut().catch(() => {});
          location.assign("/");
        }}
      >
        Sign out
      </button>
    </div>
  );
}
