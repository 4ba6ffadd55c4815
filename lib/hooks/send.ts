/** A hook's prompt to a live session: sent through the session registry and audited with the hook as the actor. */
import type { Audit } from "../audit.ts";
import type { Sessions } from "../sessions.ts";
import type { PendingPrompt } from "./hook_store.ts";

/** What a hook prompt goes through. */
export interface SendDeps {
  sessions: Sessions;
  audit: Audit;
}

/** One prompt from a hook. */
export interface HookPrompt {
  sessionId: string;
  /** A kept prompt's id (the same on every send, so the plugin takes it once); a fresh one otherwise. */
  promptId?: string;
  message: string;
  deliverAs: "steer" | "followUp";
  /** The hook, e.g. `hook:gitlab`: the audit row's actor and the user message's `by`. */
  actor: string;
  /** More for the audit row (the GitLab event, the repository). */
  detail?: object;
}

/**
 * Send `p` and audit it as `hook.prompt`.
 * @returns the prompt's id
 * @throws what `sessions.prompt` throws (the session is unknown or offline); nothing is audited then.
 */
export function sendHookPrompt(deps: SendDeps, p: HookPrompt): string {
  const sent = deps.sessions.prompt(p.sessionId, {
    message: p.message,
    deliverAs: p.deliverAs,
    by: p.actor,
    ...(p.promptId ? { promptId: p.promptId } : {}),
  });
  deps.audit.append({
    actor: p.actor,
    role: null,
    action: "hook.prompt",
    sessionId: p.sessionId,
    detail: { promptId: sent.promptId, message: sent.message, deliverAs: sent.deliverAs, ...p.detail },
  });
  return sent.promptId;
}

/** Send a kept prompt under its own id (the plugin takes it once, however often it goes). */
export function sendKeptPrompt(deps: SendDeps, p: PendingPrompt): void {
  sendHookPrompt(deps, {
    sessionId: p.sessionId,
    promptId: p.id,
    message: p.message,
    deliverAs: p.deliverAs,
    actor: p.actor,
    detail: p.detail,
  });
}
