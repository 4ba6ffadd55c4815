/**
 * What the signed-in person may do, for hiding controls the daemon would refuse with 403 anyway. Pages pass
 * the principal (`{name, role}`, what `GET /api/me` answers) to their islands as a prop; components read it
 * from `MeContext`. The server stays the authority: this only keeps buttons that cannot work off the screen.
 */
import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { Role } from "../lib/wire.ts";

/** The roles a person can sign in with (an `agent` token opens no page). */
export type UiRole = Role;

/** Who is signed in, as `GET /api/me` answers. */
export interface Me {
  name: string;
  role: UiRole;
}

/** Things a page offers that not every role may do. */
export type UiAction =
  | "prompt"
  | "abort"
  | "approve"
  | "policy"
  | "budget"
  | "spawn"
  | "stop"
  | "ship"
  | "delete"
  | "gitlab"
  | "tokens"
  | "webhooks"
  | "audit";

const LEVEL: Record<UiRole, number> = { agent: 0, viewer: 1, operator: 2, admin: 3 };

/** The least role of each action, as `routes/_table.ts` enforces it. */
const NEEDS: Record<UiAction, UiRole> = {
  prompt: "operator",
  abort: "operator",
  approve: "operator",
  policy: "operator",
  budget: "operator",
  spawn: "operator",
  stop: "operator",
  ship: "operator",
  delete: "admin",
  gitlab: "admin",
  tokens: "admin",
  webhooks: "admin",
  audit: "admin",
};

/**
 * Whether `me` may do `action`. Nobody (null) may do anything: a page without a principal shows no data.
 * @param me the signed-in principal, or null
 */
export function can(me: Me | null | undefined, action: UiAction): boolean {
  return !!me && LEVEL[me.role] >= LEVEL[NEEDS[action]];
}

/** The principal of the page, provided by each island from its `me` prop. */
export const MeContext = createContext<Me | null>(null);

/** `can()` for the page's principal (from `MeContext`). */
export function useCan(action: UiAction): boolean {
  return can(useContext(MeContext), action);
}
