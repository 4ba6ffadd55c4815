/**
 * A spawned session's worker on its page: where it is (running, stopped, crashed and why), and what a person
 * may do about it: stop it, resume it on its kept storage, download its work as a git bundle, read its last
 * log lines, or discard it (storage and history). What the role may not do is not offered.
 */
import { useState } from "preact/hooks";
import type { ContainerState } from "../lib/protocol.ts";
import { ApiError, errorText } from "../ui/api.ts";
import { bundleUrl, containerLogsUrl, deleteSession, resumeSession, stopContainer } from "../ui/rest.ts";
import { useCan } from "../ui/roles.ts";

/** The session's worker fields, as its row carries them. */
export interface WorkerPanelProps {
  sessionId: string;
  title: string;
  container: ContainerState;
  exitCode?: number;
  reason?: string;
  online: boolean;
}

const STATE_TEXT: Record<ContainerState, string> = {
  starting: "starting",
  running: "running",
  stopped: "stopped: its work is kept",
  crashed: "crashed: its work is kept",
};

export function WorkerPanel(p: WorkerPanelProps) {
  const mayStop = useCan("stop");
  const mayDiscard = useCan("delete");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const ended = p.container === "stopped" || p.container === "crashed";

  async function run(call: () => Promise<unknown>) {
    setBusy(true);
    setError(null);
    try {
      await call();
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 401)) setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }
  const resume = () => run(() => resumeSession(p.sessionId));
  const stop = () => run(() => stopContainer(p.sessionId));
  const discard = () => {
    if (
      !confirm(
        `Discard "${p.title}": its working copy, its conversation and its history? This cannot be undone.`,
      )
    ) {
      return;
    }
    void run(async () => {
      await deleteSession(p.sessionId);
      location.assign("/");
    });
  };

  return (
    <section class="panel worker" aria-label="Worker" data-container={p.container}>
      <h2>Worker</h2>
      <p class={`small worker-state ${p.container}`} role="status">
        {STATE_TEXT[p.container]}
        {p.container === "crashed" && (
          <>
            {" "}({p.reason === "oom" ? "out of memory" : p.reason ?? "unknown"}
            {p.exitCode !== undefined ? `, code ${p.exitCode}` : ""})
          </>
        )}
      </p>
      <div class="worker-actions">
        {ended && mayStop && (
          <button
            type="button"
            class="small resume"
            disabled={busy}
            onClick={() => void resume()}
          >
            Resume
          </button>
        )}
        {p.container === "running" && p.online && mayStop && (
          <button
            type="button"
            class="ghost small stop"
            disabled={busy}
            onClick={() => void stop()}
          >
            Stop
          </button>
        )}
        {mayStop && (
          <a class="ghost small bundle" href={bundleUrl(p.sessionId)} download>
            Download work
          </a>
        )}
        {mayStop && (
          <a
            class="ghost small logs"
            href={containerLogsUrl(p.sessionId)}
            target="_blank"
            rel="noopener"
          >
            Logs
          </a>
        )}
        {ended && mayDiscard && (
          <button type="button" class="ghost small discard" disabled={busy} onClick={discard}>
            Discard…
          </button>
        )}
      </div>
      {error && <p class="small error" role="alert">{error}</p>}
    </section>
  );
}
