/**
 * Shared by the in-process plugin tests: a throwaway HOME for the plugin's log and seq files, and the test
 * options they need (the plugin keeps timers and sockets alive by design until its host shuts it down).
 */
import { type Daemon, waitFor } from "./_daemon.ts";
import { allEvents, sessions } from "./_pi.ts";
import { fakePi } from "./_fake_pi.ts";
import { createLvmhAgent } from "../plugin/lvmh-agent.mjs";

/** A throwaway HOME; `log()` reads the plugin's log file. */
export async function tempHome() {
  const home = await Deno.makeTempDir({ prefix: "lvmh-plugin-" });
  return {
    home,
    log: () => {
      try {
        return Deno.readTextFileSync(`${home}/.pi/lvmh-agent.log`);
      } catch {
        return "";
      }
    },
    [Symbol.asyncDispose]: async () => {
      await Deno.remove(home, { recursive: true }).catch(() => {});
      // The plugin's batched log and seq writes may still land (and recreate the dir) just after.
      await new Promise((r) => setTimeout(r, 400));
      await Deno.remove(home, { recursive: true }).catch(() => {});
    },
  };
}

export const opts = { sanitizeOps: false, sanitizeResources: false };

export type Ev = Record<string, unknown> & { seq: number; type: string };

type DaemonLike = Pick<Daemon, "agentUrl" | "token" | "api">;

/** A fake pi with the plugin loaded against `d`, started, once the daemon lists its session online. */
export async function pluginOnline(d: DaemonLike, home: string, sessionId: string) {
  const fake = fakePi(sessionId);
  createLvmhAgent({ url: d.agentUrl, token: d.token, home })(fake.pi);
  await fake.fire("session_start", { reason: "startup" });
  await waitFor(
    async () => (await sessions(d)).find((s) => s.id === sessionId && s.online),
    `${sessionId} online`,
  );
  return fake;
}

/** The session's stored events, once they include the plugin's `buffer_overflow` notice. */
export function overflowEvents(d: DaemonLike, sessionId: string): Promise<Ev[]> {
  return waitFor(
    async () => {
      const evs = await allEvents(d, sessionId) as Ev[];
      return evs.some((e) => e.type === "buffer_overflow") ? evs : null;
    },
    "overflow notice",
    30_000,
  );
}
