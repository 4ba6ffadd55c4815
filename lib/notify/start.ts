/**
 * Wire notifications into a built daemon: the watcher turns hub frames into events, and each event goes to
 * the outbound webhooks (and web push). Kept here so `lib/daemon.ts` needs one line to start and one to stop.
 */
import type { App } from "../app.ts";
import { Watcher } from "./watcher.ts";
import type { NotifyEvent } from "./kinds.ts";

/** Start watching `app` for events and delivering them; `close()` stops both. */
export function startNotify(app: App): { close(): Promise<void> } {
  const emit = (event: NotifyEvent) => {
    app.webhooks.emit(event);
    app.push.notify(event);
  };
  const watcher = new Watcher(app.hub, emit, { stallMs: app.config.stallMinutes * 60_000 });
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
