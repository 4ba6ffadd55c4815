/**
 * The sessions list's view of a session's glance: the daemon computes title, activity and cost
 * (`lib/session_glance.ts`, carried in `SessionSummary`); here are the row's wording, its group and the order.
 * The session page makes its title the same way from the events it holds (`firstPrompt`, `sessionTitle`).
 */
import type { SessionSummary } from "../lib/protocol.ts";
import type { UiEvent } from "./types.ts";
import { firstLine, titleOf } from "../lib/glance_text.ts";

export { firstLine, TITLE_CHARS } from "../lib/glance_text.ts";

/** Rows of the sessions list rendered per page of matches (the server renders the first page). */
export const PAGE_ROWS = 100;

/** The first line of the first user prompt among `events`; null when they hold none. */
export function firstPrompt(events: readonly UiEvent[]): string | null {
  for (const e of events) {
    if (e.type === "message_end" && e.message.role === "user") return firstLine(e.message.text);
  }
  return null;
}

/**
 * A session's title: pi's name, else its first prompt's first line, else the cwd's last folder, else its id.
 * @param s the summary (name, cwd, id)
 * @param firstPrompt the first line of the first prompt, when known
 */
export function sessionTitle(
  s: Pick<SessionSummary, "id" | "name" | "cwd">,
  firstPrompt: string | null | undefined,
): string {
  return titleOf(s, firstPrompt);
}

/** The row's activity line: what a person reads to know whether the session needs them. */
export function activityText(a: SessionSummary["activity"]): string {
  switch (a.state) {
    case "waiting":
      return `waiting for approval${a.tool ? `: ${a.tool}` : ""}`;
    case "running": {
      const now = a.tool ?? a.line;
      return now ? `running: ${now}` : "running";
    }
    default:
      return a.line ? `${a.state}: ${a.line}` : a.state;
  }
}

/** The groups of the list, in the order they are shown. */
export type Group = "needs-you" | "running" | "idle" | "stopped" | "offline";
/** Headings of the groups. */
export const GROUP_LABEL: Record<Group, string> = {
  "needs-you": "Needs you",
  running: "Running",
  idle: "Idle",
  stopped: "Stopped or crashed: resumable",
  offline: "Offline",
};
const RANK: Record<Group, number> = { "needs-you": 0, running: 1, idle: 2, stopped: 3, offline: 4 };

/**
 * Which group a session is in: waiting for approval first, then running, idle, a spawned session whose worker
 * stopped or crashed (its work kept, resumable), offline.
 */
export function groupOf(s: Pick<SessionSummary, "waiting" | "online" | "state" | "container">): Group {
  if (s.waiting > 0) return "needs-you";
  if (!s.online && (s.container === "stopped" || s.container === "crashed")) return "stopped";
  if (!s.online) return "offline";
  return s.state === "running" ? "running" : "idle";
}

/** Latest activity of a session (streamed deltas included), else its start. */
export function activeAt(s: Pick<SessionSummary, "lastActivityAt" | "lastEventAt" | "startedAt">): number {
  return s.lastActivityAt ?? s.lastEventAt ?? s.startedAt;
}

/**
 * Sort in place: by group, then latest stored event first (not streamed deltas, so rows do not change places
 * on every tick while several sessions stream), then id (so the order is stable).
 */
export function sortByGroup(list: SessionSummary[]): SessionSummary[] {
  const key = new Map(list.map((s) => [s, RANK[groupOf(s)]]));
  return list.sort((a, b) =>
    key.get(a)! - key.get(b)! || (b.lastEventAt ?? b.startedAt) - (a.lastEventAt ?? a.startedAt) ||
    (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  );
}
