/**
 * "Delivered" lag with the real pi: from the plugin releasing an approved call (its `approval_resolved` ts, the
 * plugin's Date.now() as the hook returns to pi) to the daemon getting that event (the approval's `appliedAt`,
 * the daemon's Date.now() on arrival; same machine, same clock, ms). Two plugin bundles side by side, one pi
 * process each on one daemon, runs interleaved so both see the same machine: the committed bundle and a
 * reference bundle given as the first argument (e.g. one built from an earlier commit).
 *
 * Usage: deno run -A bench/approvals_applied_pi.ts REFERENCE.mjs [runs per bundle per version, default 40]
 */
import { startDaemon, waitFor } from "../testing/daemon.ts";
import { startFakeLlm } from "../testing/fixtures/fake_llm.mjs";
import { signalChild } from "../testing/proc.ts";
import {
  allEvents,
  assertInstalled,
  makePiHome,
  PI_VERSIONS,
  type PiVersion,
  PLUGIN,
  sessions,
} from "../testing/pi.ts";

const REFERENCE = Deno.args[0];
const RUNS = Number(Deno.args[1] ?? 40);
if (!REFERENCE) throw new Error("usage: approvals_applied_pi.ts REFERENCE.mjs [runs]");

function pct(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

async function bench(v: PiVersion) {
  assertInstalled(v);
  const llm = await startFakeLlm();
  await using d = await startDaemon();
  const runs: { name: string; plugin: string; lags: number[]; id?: string }[] = [
    { name: "committed", plugin: PLUGIN, lags: [] },
    { name: "reference", plugin: REFERENCE, lags: [] },
  ];
  const homes = await Promise.all(runs.map(() => makePiHome(llm.url)));
  const pis = runs.map((r, i) =>
    new Deno.Command(v.node, {
      args: [v.cli, "--mode", "rpc", "-e", r.plugin],
      cwd: homes[i].workspace,
      env: homes[i].env(d),
      clearEnv: true,
      stdin: "piped",
      stdout: "null",
      stderr: "null",
    }).spawn()
  );
  const writers = pis.map((p) => p.stdin.getWriter());
  try {
    for (const [i, r] of runs.entries()) {
      const s = await waitFor(
        async () => (await sessions(d)).find((s) => s.online && s.cwd === homes[i].workspace),
        `pi online (${r.name})`,
        20_000,
      );
      r.id = s.id as string;
      const res = await d.api(`/api/sessions/${r.id}/policy`, {
        method: "PUT",
        body: JSON.stringify({ ask: ["bash"] }),
      });
      await res.body?.cancel();
    }
    for (let n = 0; n < 2 * RUNS; n++) {
      const i = n % 2, r = runs[i];
      const id = r.id!;
      await writers[i].write(
        new TextEncoder().encode(
          JSON.stringify({ id: `p${n}`, type: "prompt", message: "please run the command" }) + "\n",
        ),
      );
      const approval = await waitFor(
        async () => {
          const list = await (await d.api(`/api/sessions/${id}/approvals`)).json() as {
            id: string;
            state: string;
          }[];
          return list.find((a) => a.state === "pending");
        },
        "pending approval",
        20_000,
      );
      const ok = await d.api(`/api/approvals/${approval.id}`, {
        method: "POST",
        body: JSON.stringify({ decision: "approve" }),
      });
      await ok.body?.cancel();
      const applied = await waitFor(
        async () => {
          const list = await (await d.api(`/api/sessions/${id}/approvals`)).json() as {
            id: string;
            appliedAt: number | null;
          }[];
          return list.find((a) => a.id === approval.id && a.appliedAt !== null);
        },
        "applied",
        20_000,
      );
      const evs = await waitFor(
        async () => {
          const all = await allEvents(d, id) as {
            type: string;
            approvalId?: string;
            ts: number;
            seq: number;
          }[];
          const resolved = all.find((e) => e.type === "approval_resolved" && e.approvalId === approval.id);
          return resolved && all.some((e) => e.type === "agent_settled" && e.seq > resolved.seq)
            ? resolved
            : null;
        },
        "the run ends",
        20_000,
      );
      r.lags.push(applied.appliedAt! - evs.ts);
    }
    for (const r of runs) {
      console.log(
        `pi ${v.name} ${r.name}: released → the daemon has approval_resolved (${r.lags.length}): p50 ${
          pct(r.lags, 0.5)
        } ms, p90 ${pct(r.lags, 0.9)} ms, p99 ${pct(r.lags, 0.99)} ms, max ${Math.max(...r.lags)} ms`,
      );
    }
  } finally {
    for (const w of writers) await w.close().catch(() => {});
    for (const p of pis) {
      signalChild(p, "SIGTERM");
      await p.status;
    }
    for (const h of homes) await h.remove();
    await llm.close();
  }
}

for (const v of PI_VERSIONS) await bench(v);
