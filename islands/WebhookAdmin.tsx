/**
 * The webhooks page (admins): outbound endpoints with what each is sent and how its latest delivery went, a
 * form that registers one and shows its signing secret once (as tokens are shown), a signed test delivery,
 * the delivery log, delete; and the inbound GitLab hook's secret (set, generate, clear; never shown back).
 */
import { useEffect, useState } from "preact/hooks";
import { ApiError, SignInRequired } from "../lib/ui/api.ts";
import {
  addWebhook,
  clearGitlabHookSecret,
  type GitlabHookStatus,
  gitlabHookStatus,
  listWebhooks,
  removeWebhook,
  setGitlabHookSecret,
  testWebhook,
  webhookDeliveries,
} from "../lib/ui/rest.ts";
import type { Endpoint } from "../lib/webhooks/webhooks.ts";
import type { AttemptRow } from "../lib/webhooks/webhook_store.ts";
import type { NotifyKind } from "../lib/notify/kinds.ts";

/** How long the page follows a test delivery before it leaves it to the log. */
const TEST_FOLLOW_MS = 15_000;

function when(ms: number): string {
  return new Date(ms).toISOString().replace("T", " ").slice(0, 19);
}

function messageOf(e: unknown): string {
  if (e instanceof SignInRequired) return "Sign in again.";
  return e instanceof ApiError ? e.message : String(e);
}

/** The URL without its query: a receiver's key may sit there, and this page may be on a shared screen. */
function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}${u.search ? "?…" : ""}`;
  } catch {
    return url;
  }
}

/** One attempt in words: status (or the error) and latency, and whether it will be tried again. */
function attemptText(a: AttemptRow): string {
  const result = a.status === null ? (a.error ?? "no answer") : `HTTP ${a.status}`;
  const state = a.state === "pending" ? ", will retry" : a.state === "failed" ? ", gave up" : "";
  return `${result} in ${a.latencyMs} ms${state}`;
}

function attemptClass(a: AttemptRow): string {
  if (a.status !== null && a.status >= 200 && a.status < 300) return "done";
  return a.state === "pending" ? "pending" : "error";
}

/** A GitLab hook secret: 32 random bytes as hex (GitLab takes any string; this one needs no escaping). */
function randomSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export interface WebhookAdminProps {
  endpoints: Endpoint[];
  gitlab: GitlabHookStatus;
  kinds: { kind: NotifyKind; label: string }[];
  defaults: NotifyKind[];
}

export default function WebhookAdmin(props: WebhookAdminProps) {
  const [endpoints, setEndpoints] = useState(props.endpoints);
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState<NotifyKind[]>(props.defaults);
  const [created, setCreated] = useState<{ id: string; url: string; secret: string } | null>(null);
  const [copied, setCopied] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [logs, setLogs] = useState<Record<string, AttemptRow[]>>({});
  const [testing, setTesting] = useState<Record<string, string>>({});

  async function run(fn: () => Promise<void>) {
    setBusy(true);
    setError(null);
    try {
      await fn();
      setEndpoints(await listWebhooks());
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setBusy(false);
    }
  }

  const add = (e: Event) => {
    e.preventDefault();
    void run(async () => {
      const made = await addWebhook(url.trim(), events);
      setCreated({ id: made.id, url: made.url, secret: made.secret });
      setCopied(null);
      setUrl("");
    });
  };

  const remove = (ep: Endpoint) => {
    if (!confirm(`Delete the webhook to ${shownUrl(ep.url)}? What it still has queued is dropped.`)) return;
    void run(async () => {
      await removeWebhook(ep.id);
      setLogs(({ [ep.id]: _, ...rest }) => rest);
    });
  };

  async function showLog(id: string) {
    try {
      const rows = await webhookDeliveries(id);
      setLogs((l) => ({ ...l, [id]: rows }));
    } catch (e) {
      setError(messageOf(e));
    }
  }

  /** Queue a test delivery and follow it until its first attempt is logged. */
  async function test(id: string) {
    setError(null);
    try {
      const { deliveryId } = await testWebhook(id);
      setTesting((t) => ({ ...t, [id]: "Test queued…" }));
      const deadline = Date.now() + TEST_FOLLOW_MS;
      for (;;) {
        const rows = await webhookDeliveries(id);
        const mine = rows.find((r) => r.deliveryId === deliveryId);
        if (mine || Date.now() > deadline) {
          setTesting((t) => ({ ...t, [id]: mine ? `Test: ${attemptText(mine)}` : "Test still queued" }));
          setLogs((l) => (id in l ? { ...l, [id]: rows } : l));
          setEndpoints(await listWebhooks());
          return;
        }
        await new Promise((r) => setTimeout(r, 300));
      }
    } catch (e) {
      setError(messageOf(e));
    }
  }

  async function copy(value: string, field: string) {
    try {
      await navigator.clipboard.writeText(value);
      setCopied(field);
    } catch {
      // No clipboard permission (plain http on another host): the value is selectable instead.
      (document.getElementById(field) as HTMLInputElement | null)?.select();
    }
  }

  // Kept in the order the kinds are listed, whatever order they were ticked in.
  const toggle = (kind: NotifyKind, on: boolean) =>
    setEvents((list) => props.kinds.map((k) => k.kind).filter((k) => k === kind ? on : list.includes(k)));

  return (
    <main class="admin-page webhooks-page">
      <h1>Webhooks</h1>
      <section aria-labelledby="outbound">
        <h2 id="outbound">Outbound</h2>
        <p class="muted small">
          lvmh POSTs each chosen event as JSON, signed the Standard Webhooks way (<code>webhook-id</code>,
          {" "}
          <code>webhook-timestamp</code>, <code>webhook-signature</code>), and retries for 24 hours.
        </p>
        <form class="token-form webhook-form" onSubmit={add}>
          <input
            type="url"
            name="webhook-url"
            aria-label="Endpoint URL"
            placeholder="https://example.com/lvmh-hook"
            required
            value={url}
            onInput={(e) => setUrl((e.target as HTMLInputElement).value)}
          />
          <fieldset class="webhook-events">
            <legend class="small">Events</legend>
            {props.kinds.map(({ kind, label }) => (
              <label key={kind} class="small" title={label}>
                <input
                  type="checkbox"
                  name="webhook-event"
                  value={kind}
                  checked={events.includes(kind)}
                  onChange={(e) => toggle(kind, (e.target as HTMLInputElement).checked)}
                />{" "}
                {kind}
              </label>
            ))}
          </fieldset>
          <button type="submit" class="primary" disabled={busy || !url.trim() || events.length === 0}>
            Add endpoint
          </button>
        </form>
        {error && <p class="error" role="alert">{error}</p>}
        {created && (
          <div class="new-token" role="status" data-new-webhook={created.id}>
            <p class="small">
              The signing secret of{" "}
              <b>{shownUrl(created.url)}</b>. It is shown only now: put it in the receiver before leaving this
              page.
            </p>
            <input
              id="new-webhook-secret"
              type="text"
              readOnly
              value={created.secret}
              aria-label="New webhook secret"
            />
            <button
              type="button"
              class="small copy"
              onClick={() => void copy(created.secret, "new-webhook-secret")}
            >
              {copied === "new-webhook-secret" ? "Copied" : "Copy"}
            </button>
            <button type="button" class="ghost small" onClick={() => setCreated(null)}>Done</button>
          </div>
        )}
        <table class="webhooks">
          <thead>
            <tr>
              <th>endpoint</th>
              <th>events</th>
              <th>last delivery</th>
              <th></th>
            </tr>
          </thead>
          <tbody>
            {endpoints.map((ep) => [
              <tr key={ep.id} data-webhook={ep.id}>
                <td class="detail">
                  <code>{shownUrl(ep.url)}</code>
                  <div class="muted small">added {when(ep.createdAt)}</div>
                </td>
                <td>
                  {ep.events.map((k) => <span key={k} class="chip">{k}</span>)}
                </td>
                <td class="nowrap last-delivery" data-last={ep.last ? attemptClass(ep.last) : "none"}>
                  {ep.last
                    ? (
                      <>
                        <span class={`chip ${attemptClass(ep.last)}`}>{attemptText(ep.last)}</span>
                        <div class="muted small">{ep.last.type} at {when(ep.last.at)}</div>
                      </>
                    )
                    : <span class="muted small">none yet</span>}
                  {testing[ep.id] && <div class="small test-result" role="status">{testing[ep.id]}</div>}
                </td>
                <td class="nowrap">
                  <button type="button" class="small test" disabled={busy} onClick={() => void test(ep.id)}>
                    Send test
                  </button>{" "}
                  <button
                    type="button"
                    class="ghost small log"
                    aria-expanded={ep.id in logs}
                    onClick={() =>
                      ep.id in logs ? setLogs(({ [ep.id]: _, ...rest }) => rest) : void showLog(ep.id)}
                  >
                    Deliveries
                  </button>{" "}
                  <button
                    type="button"
                    class="danger small delete"
                    disabled={busy}
                    onClick={() => remove(ep)}
                  >
                    Delete
                  </button>
                </td>
              </tr>,
              ep.id in logs && (
                <tr key={`${ep.id}-log`} class="webhook-log" data-log={ep.id}>
                  <td colSpan={4}>
                    {logs[ep.id].length === 0
                      ? <span class="muted small">No attempts yet.</span>
                      : (
                        <ul class="small">
                          {logs[ep.id].map((a, i) => (
                            <li key={i}>
                              {when(a.at)} <code>{a.type}</code> <code>{a.deliveryId}</code>:{" "}
                              <span class={`chip ${attemptClass(a)}`}>{attemptText(a)}</span>
                            </li>
                          ))}
                        </ul>
                      )}
                  </td>
                </tr>
              ),
            ])}
            {endpoints.length === 0 && (
              <tr>
                <td colSpan={4} class="muted">No outbound webhooks yet.</td>
              </tr>
            )}
          </tbody>
        </table>
      </section>
      <GitlabHook initial={props.gitlab} />
    </main>
  );
}

/** The inbound GitLab hook: its URL to paste into GitLab, and its secret (set or cleared, never shown back). */
function GitlabHook({ initial }: { initial: GitlabHookStatus }) {
  const [status, setStatus] = useState(initial);
  const [secret, setSecret] = useState("");
  const [generated, setGenerated] = useState(false);
  const [saved, setSaved] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // The page's own origin is only known in the browser; the server renders the path.
  const [origin, setOrigin] = useState("");
  useEffect(() => setOrigin(location.origin), []);

  async function run(fn: () => Promise<void>) {
    setBusy(true);
    setError(null);
    try {
      await fn();
      setStatus(await gitlabHookStatus());
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setBusy(false);
    }
  }

  const save = (e: Event) => {
    e.preventDefault();
    const value = secret;
    void run(async () => {
      await setGitlabHookSecret(value);
      // A generated secret exists nowhere else yet: show it this once, for GitLab's "Secret token" field.
      setSaved(generated ? value : null);
      setSecret("");
      setGenerated(false);
    });
  };

  const clear = () => {
    if (!confirm("Clear the GitLab hook secret? /hooks/gitlab answers 404 until a new one is set.")) return;
    void run(async () => {
      await clearGitlabHookSecret();
      setSaved(null);
    });
  };

  const state = status.source === "env"
    ? "On: the secret comes from LVMH_GITLAB_HOOK_SECRET in the daemon's environment (change it there)."
    : status.source === "api"
    ? "On: a secret is set."
    : "Off: no secret is set, so the hook answers 404.";
  return (
    <section aria-labelledby="gitlab-hook" class="gitlab-hook" data-source={status.source ?? "none"}>
      <h2 id="gitlab-hook">GitLab hook</h2>
      <p class="small">
        In GitLab, add a project webhook to <code>{origin}{status.path}</code>{" "}
        with the secret token below, for comments and pipeline events. A comment starting with{" "}
        <code>/lvmh</code>{" "}
        prompts the session on that branch (or spawns one); a failed pipeline tells its session.
      </p>
      <p class="small hook-state" role="status">{state}</p>
      <form class="token-form" onSubmit={save}>
        <input
          type={generated ? "text" : "password"}
          name="gitlab-secret"
          aria-label="GitLab hook secret"
          autocomplete="new-password"
          placeholder={status.enabled
            ? "new secret (replaces the current one)"
            : "secret (16 characters or more)"}
          minLength={16}
          value={secret}
          onInput={(e) => {
            setSecret((e.target as HTMLInputElement).value);
            setGenerated(false);
          }}
        />
        <button
          type="button"
          class="ghost small generate"
          onClick={() => {
            setSecret(randomSecret());
            setGenerated(true);
          }}
        >
          Generate
        </button>
        <button type="submit" class="primary" disabled={busy || secret.length < 16}>Save secret</button>
        {status.source === "api" && (
          <button type="button" class="danger small clear" disabled={busy} onClick={clear}>Clear</button>
        )}
      </form>
      {error && <p class="error" role="alert">{error}</p>}
      {saved && (
        <div class="new-token" role="status" data-new-gitlab-secret>
          <p class="small">The secret is saved. It is shown only now: paste it into GitLab's Secret token.</p>
          <input
            id="gitlab-secret-value"
            type="text"
            readOnly
            value={saved}
            aria-label="Saved GitLab secret"
          />
          <button type="button" class="ghost small" onClick={() => setSaved(null)}>Done</button>
        </div>
      )}
    </section>
  );
}
