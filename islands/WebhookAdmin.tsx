/**
 * The webhooks page (admins): outbound endpoints with what each is sent and how its latest delivery went, a
 * form that registers one and shows its signing secret once (as tokens are shown), a signed test delivery,
 * the delivery log, delete; and the inbound GitLab hook's secret (set, generate, clear; never shown back).
 */
import { useState } from "preact/hooks";
import { errorText } from "../ui/api.ts";
import {
  addWebhook,
  type GitlabHookStatus,
  listWebhooks,
  removeWebhook,
  testWebhook,
  webhookDeliveries,
} from "../ui/rest.ts";
import { useAction } from "../ui/use_action.ts";
import { attemptClass, attemptText, shownUrl, when } from "../ui/webhook_view.ts";
import type { AttemptRow, Endpoint } from "../ui/types.ts";
import type { NotifyKind } from "../lib/notify/kinds.ts";
import { GitlabHookForm } from "../components/GitlabHookForm.tsx";
import { ShownOnce } from "../components/ShownOnce.tsx";

/** How long the page follows a test delivery before it leaves it to the log. */
const TEST_FOLLOW_MS = 15_000;

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
  const [logs, setLogs] = useState<Record<string, AttemptRow[]>>({});
  const [testing, setTesting] = useState<Record<string, string>>({});
  const { busy, error, setError, run } = useAction(async () => setEndpoints(await listWebhooks()));

  const add = (e: Event) => {
    e.preventDefault();
    void run(async () => {
      const made = await addWebhook(url.trim(), events);
      setCreated({ id: made.id, url: made.url, secret: made.secret });
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
      setError(errorText(e));
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
      setError(errorText(e));
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
          <ShownOnce
            id="new-webhook-secret"
            value={created.secret}
            label="New webhook secret"
            data={{ "data-new-webhook": created.id }}
            onDone={() => setCreated(null)}
          >
            The signing secret of{" "}
            <b>{shownUrl(created.url)}</b>. It is shown only now: put it in the receiver before leaving this
            page.
          </ShownOnce>
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
      <GitlabHookForm initial={props.gitlab} />
    </main>
  );
}
