/**
 * Shared by the in-process plugin tests: a throwaway HOME for the plugin's log and seq files, and the test
 * options they need (the plugin keeps timers and sockets alive by design until its host shuts it down).
 */

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
