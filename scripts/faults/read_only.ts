/**
 * Fault row: the data dir is read-only at start. The daemon must exit with code 2 and one clear line, not a
 * stack trace. As root (where permission bits do not stop writes) the dir is a read-only tmpfs mount;
 * otherwise a dir without write permission.
 */
import { runMainOnce } from "../../testing/daemon.ts";

export interface ReadOnlyResult {
  code: number;
  line: string;
  how: string;
}

/** Start `main.ts` on a read-only data dir and report how it ended. */
export async function readOnlyStart(): Promise<ReadOnlyResult> {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-faults-ro-" });
  const root = Deno.uid() === 0;
  const sh = (args: string[]) => new Deno.Command(args[0], { args: args.slice(1) }).output();
  try {
    if (root) {
      const { code } = await sh(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", dir]);
      if (code !== 0) throw new Error(`Cannot mount a read-only tmpfs on ${dir}`);
    } else await Deno.chmod(dir, 0o555);
    const out = await runMainOnce({ LVMH_TOKEN: "faults-token-0123456789", LVMH_DATA_DIR: dir });
    return {
      code: out.code,
      line: (out.stderr + out.stdout).trim(),
      how: root ? "read-only tmpfs" : "mode 0555",
    };
  } finally {
    if (root) await sh(["umount", dir]);
    else await Deno.chmod(dir, 0o755).catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
