/**
 * The kinds of event worth calling a person back for, shared by web push, outbound webhooks and the settings UI.
 */
import { z } from "zod";

/** Every kind, in the order the settings UI lists them. */
export const NOTIFY_KINDS = [
  "approval.requested",
  "run.settled",
  "run.failed",
  "session.lost",
  "session.stalled",
  "spawn.failed",
  "session.crashed",
  "merge_request.pipeline",
  "merge_request.merged",
  "budget.reached",
] as const;

/** What each kind means, in words for the settings pages ("notify me when …"). */
export const KIND_LABELS: Record<(typeof NOTIFY_KINDS)[number], string> = {
  "approval.requested": "a tool call waits for approval",
  "run.settled": "a run finishes",
  "run.failed": "a run fails or is aborted",
  "session.lost": "a session drops without saying goodbye",
  "session.stalled": "a running session goes quiet",
  "spawn.failed": "a spawn fails",
  "session.crashed": "a session's worker crashes (it can be resumed)",
  "merge_request.pipeline": "a merge request's pipeline fails or succeeds",
  "merge_request.merged": "a session's merge request is merged",
  "budget.reached": "a session's budget, or the daily cap, is reached",
};

/** One kind of notification. */
export const NotifyKind = z.enum(NOTIFY_KINDS);
export type NotifyKind = z.infer<typeof NotifyKind>;

/** What happened, as webhooks deliver it (`{type, at, sessionId, data}`) and push payloads carry it. */
export interface NotifyEvent {
  type: NotifyKind;
  /** Milliseconds since the epoch. */
  at: number;
  sessionId: string | null;
  data: Record<string, unknown>;
  /**
   * What happened, named the same on every replica that saw it (an approval's id, a day's cap), when there is
   * such a name: outbound webhooks make their delivery ids from it, so copies of it are stored once. Not sent.
   */
  key?: string;
}

/** A one-line human title for an event, for push notifications. */
export function describe(event: NotifyEvent): { title: string; body: string } {
  const name = String(event.data.sessionName ?? event.sessionId ?? "lvmh");
  switch (event.type) {
    case "approval.requested":
      return { title: `${name} needs approval`, body: `${event.data.toolName ?? "a tool"} waits for you` };
    case "run.settled":
      return { title: `${name} finished`, body: "The run settled; it waits for your next prompt." };
    case "run.failed":
      return { title: `${name} failed`, body: String(event.data.reason ?? "The run ended with an error.") };
    case "session.lost":
      return { title: `${name} went away`, body: "The session dropped without saying goodbye." };
    case "session.stalled":
      return { title: `${name} is stalled`, body: `No event for ${event.data.minutes ?? "?"} minutes.` };
    case "spawn.failed":
      return { title: `Spawn failed`, body: String(event.data.error ?? event.data.repo ?? "") };
    case "session.crashed":
      return {
        title: `${name} crashed`,
        body: `Its worker ended (${event.data.reason ?? "unknown"}); its work is kept: resume it.`,
      };
    case "merge_request.pipeline":
      return {
        title: `${name}: pipeline ${event.data.status ?? "finished"}`,
        body: `!${event.data.iid ?? "?"} ${String(event.data.title ?? "")}`.trim(),
      };
    case "merge_request.merged":
      return {
        title: `${name}: merged`,
        body: `!${event.data.iid ?? "?"} ${String(event.data.title ?? "")}`.trim(),
      };
    case "budget.reached":
      return event.data.scope === "daily"
        ? { title: "Daily budget reached", body: "Every run is stopped until tomorrow (UTC) or a raise." }
        : { title: `${name}: budget reached`, body: String(event.data.text ?? "The run waits or stopped.") };
  }
}
