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
      return `Reconnecting${status.retryInMs ? ` in ${Math.ceil(status.retryInMs / 1000)} s` : "…"}`;
    case "closed":
      return "Disconnected";
    default:
      return "Connecting…";
  }
}

export default function TopBarControls() {
  const [status, setStatus] = useState<SocketStatus | null>(null);
  useEffect(() => subscribeStatus(setStatus), []);
  const state = status?.state ?? "connecting";
  return (
    <div class="topbar-controls">
      <span class={`conn conn-${state}`} data-conn={state} role="status" aria-live="polite">
        <span class="dot" aria-hidden="true"></span>
        <span class="conn-label">{label(status)}</span>
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
