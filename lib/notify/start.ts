/**
 * Wire notifications into a built daemon: the watcher turns hub frames into events, and each event goes to
 * the outbound webhooks (and web push). Kept here so `lib/daemon.ts` needs one line to start and one to stop.
 */
import type { App } from "../app.ts";
import { Watcher } from "./watcher.ts";
import type { NotifyEvent } from "./kinds.ts";

/** Minutes without an event before a running session counts as stalled, from `LVMH_STALL_MINUTES` (default 10). */
export function stallMinutes(env: Record<string, string | undefined> = Deno.env.toObject()): number {
  const n = Number(env.LVMH_STALL_MINUTES ?? "");
  return Number.isFinite(n) && n > 0 ? n : 10;
}

/** Start watching `app` for events and delivering them; `close()` stops both. */
export function startNotify(app: App): { close(): Promise<void> } {
  const emit = (event: NotifyEvent) => {
    app.webhooks.emit(event);
    app.push.notify(event);
  };
  const watcher = new Watcher(app.hub, emit, { stallMs: stallMinutes() * 60_000 });
  watcher.prime(app.sessions.list(), app.approvals.list({ state: "pending" }));
  app.webhooks.start();
  return {
    async close() {
      watcher.close();
      app.push.close();
      await app.webhooks.close();
    },
  };
}
