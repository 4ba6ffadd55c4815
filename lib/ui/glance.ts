/**
 * A session "at a glance", for the sessions list: its title, what it is doing now (the running tool or the
 * last streamed line, else the last assistant line) and its cost. One pure reducer over events serves both
 * the server render (over the events it reads) and the browser (over the live events of followed sessions).
 */
import type { SessionSummary } from "../protocol.ts";
import type { UiEvent } from "./wire.ts";

/** What the list shows of one session beyond its summary. */
export interface Glance {
  /** The first line of the first prompt (about 60 characters); null until one is seen. */
  firstPrompt: string | null;
  /** The last non-empty line of the latest assistant text. */
  lastText: string | null;
  /** The last line of text being streamed now (never stored by the daemon). */
  streamLine: string | null;
  /** The tool running now with its main argument, e.g. `bash npm test`. */
  activeTool: string | null;
  /** Cost summed over the `agent_end` events seen. */
  cost: number;
  /** The highest persisted seq applied. */
  seq: number;
}

/** A glance of nothing seen yet. */
export const EMPTY_GLANCE: Glance = {
  firstPrompt: null,
  lastText: null,
  streamLine: null,
  activeTool: null,
  cost: 0,
  seq: 0,
};

/** Longest title made from a prompt; prompts are cut at a word when one ends near the limit. */
export const TITLE_CHARS = 60;

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  const space = cut.lastIndexOf(" ");
  return (space > max * 0.6 ? cut.slice(0, space) : cut).trimEnd() + "…";
}

/** The first non-empty line of `text`, clipped to `max` characters; null when there is none. */
export function firstLine(text: string, max = TITLE_CHARS): string | null {
  const line = text.split("\n").map((l) => l.trim()).find(Boolean);
  return line ? clip(line, max) : null;
}

/** The last non-empty line of `text`, clipped to `max` characters; null when there is none. */
export function lastLine(text: string, max = 140): string | null {
  const line = text.split("\n").map((l) => l.trim()).filter(Boolean).at(-1);
  return line ? clip(line, max) : null;
}

/** The argument a person recognises a call by (command, path, pattern), or the first short string. */
export function toolHint(toolName: string, args: unknown): string {
  const a = args && typeof args === "object" ? args as Record<string, unknown> : {};
  const keys = ["command", "path", "file_path", "pattern", "agent", "action"];
  const v = keys.map((k) => a[k]).find((x) => typeof x === "string") ??
    Object.values(a).find((x) => typeof x === "string");
  const hint = typeof v === "string" ? firstLine(v, 80) : null;
  return hint ? `${toolName} ${hint}` : toolName;
}

/**
 * Apply events to a glance (persisted ones at most once each, by seq; live deltas always).
 * @param g the glance so far (not mutated)
 * @param events events of one session, seq ascending
 */
export function applyGlance(g: Glance, events: readonly UiEvent[]): Glance {
  let next = g;
  for (const e of events) {
    if (e.type === "message_update") {
      if (e.kind === "thinking") continue;
      const text = (next.streamLine ?? "") + e.delta;
      // Keep a bounded tail: only its last line is shown.
      next = { ...next, streamLine: text.length > 2000 ? text.slice(-2000) : text };
      continue;
    }
    if (e.seq <= next.seq) continue;
    next = { ...next, seq: e.seq };
    switch (e.type) {
      case "message_end": {
        const m = e.message;
        if (m.role === "user" && next.firstPrompt === null) next.firstPrompt = firstLine(m.text);
        if (m.role === "assistant") {
          next = { ...next, lastText: lastLine(m.text) ?? next.lastText, streamLine: null };
        }
        break;
      }
      case "tool_execution_start":
        next.activeTool = toolHint(e.toolName, e.args);
        break;
      case "tool_execution_end":
        next.activeTool = null;
        break;
      case "agent_end":
        next = { ...next, cost: next.cost + (e.usage.totalCost ?? 0), activeTool: null, streamLine: null };
        break;
      case "bye":
        next = { ...next, activeTool: null, streamLine: null };
        break;
    }
  }
  return next;
}

/** The last folder of a path (`/home/me/src/app/` → `app`). */
export function lastFolder(path: string | null | undefined): string | null {
  const parts = (path ?? "").split(/[\\/]+/).filter(Boolean);
  return parts.at(-1) ?? null;
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
  return s.name?.trim() || firstPrompt || lastFolder(s.cwd) || s.id;
}

/** The groups of the list, in the order they are shown. */
export type Group = "needs-you" | "running" | "idle" | "offline";
/** Headings of the groups. */
export const GROUP_LABEL: Record<Group, string> = {
  "needs-you": "Needs you",
  running: "Running",
  idle: "Idle",
  offline: "Offline",
};
const RANK: Record<Group, number> = { "needs-you": 0, running: 1, idle: 2, offline: 3 };

/** Which group a session is in: waiting for approval first, then running, idle, offline. */
export function groupOf(s: Pick<SessionSummary, "waiting" | "online" | "state">): Group {
  if (s.waiting > 0) return "needs-you";
  if (!s.online) return "offline";
  return s.state === "running" ? "running" : "idle";
}

/** Sort in place: by group, then latest activity first, then id (so the order is stable). */
export function sortByGroup(list: SessionSummary[]): SessionSummary[] {
  const key = new Map(list.map((s) => [s, RANK[groupOf(s)]]));
  return list.sort((a, b) =>
    key.get(a)! - key.get(b)! || (b.lastEventAt ?? b.startedAt) - (a.lastEventAt ?? a.startedAt) ||
    (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  );
}
