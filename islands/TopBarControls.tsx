/**
 * The live part of the top bar, on every signed-in page: the connection indicator, "N waiting" approvals,
 * sign-out, and the sign-in prompt when the daemon stops accepting this browser's token. It reads the page's
 * one connection (`ui/live.ts`), which it is the first to open.
 */
import { useEffect, useState } from "preact/hooks";
import { signOut } from "../ui/api.ts";
import type { SocketStatus } from "../ui/live_socket.ts";
import { pageLive } from "../ui/live.ts";
import { EMPTY_DIRECTORY } from "../ui/session_directory.ts";
import { useLive } from "../ui/use_live.ts";
import { SignInForm } from "../components/SignInForm.tsx";
import { WaitingBadge } from "../components/WaitingBadge.tsx";

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
  const status = useLive((l) => l.status, null);
  const needSignIn = useLive((l) => l.needSignIn, false);
  const pending = useLive((l) => l.approvals, null);
  const sessions = useLive((l) => l.sessions, EMPTY_DIRECTORY);
  const [retryAt, setRetryAt] = useState(0);
  const [, setTick] = useState(0);
  useEffect(() => {
    setRetryAt(status?.state === "retrying" ? Date.now() + (status.retryInMs ?? 0) : 0);
  }, [status]);
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
      <WaitingBadge pending={pending ?? []} sessions={sessions.byId} />
      <span class={`conn conn-${state}`} data-conn={state} role="status" aria-live="polite">
        <span class="dot" aria-hidden="true"></span>
        <span class="conn-label">
          {label(status)}
          {state === "retrying" && <span aria-hidden="true">{seconds > 0 ? ` in ${seconds} s` : "…"}</span>}
        </span>
        {state === "retrying" && (
          <button type="button" class="link" onClick={() => pageLive().reconnectNow()}>retry now</button>
        )}
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
      {needSignIn && (
        <div class="overlay">
          <SignInForm message="The daemon no longer accepts this browser's token." />
        </div>
      )}
    </div>
  );
}
