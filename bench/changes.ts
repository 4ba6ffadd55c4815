/**
 * "What changed" at size: a working copy with 2,000 changed files and 200,000 changed lines (each file 50
 * lines replaced). Measured: lib/changes (git's script and the parse) on the host, as REST answers it and as a
 * plugin's one-frame answer; the diff helper container on the real engine when `LVMH_TEST_DOCKER_SOCK` is set;
 * and the Changes view in Chromium, from the click to every file listed and the open diffs painted, with the
 * REST answer served to the page.
 * Run: `deno task bench` (all benches) or `deno run -A bench/changes.ts`.
 */
import { startDaemon, waitFor } from "../testing/daemon.ts";
import { connectAgent, sessionInfo } from "../testing/agent.ts";
import { gotoHydrated, launchBrowser, openPage } from "../testing/chromium.ts";
import { buildStubWorker, cleanupDocker, DOCKER_SOCK, runOnce, testEngine, uniq } from "../testing/docker.ts";
import { runDiffHelper } from "../docker/diff_helper.ts";
import {
  CHANGE_LIMITS,
  type ChangeLimits,
  type Changes,
  CHANGES_SCRIPT,
  changesFromOutput,
  changesScriptArgs,
  newBoundary,
  PLUGIN_CHANGE_LIMITS,
} from "../lib/changes/mod.ts";

const FILES = 2_000;
const LINES = 100;
const CHANGED = 50;
const ROUNDS = 3;

// Makes the base commit, then replaces the first CHANGED lines of every file (awk: one process for all).
const MAKE = `set -eu
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
git init -q -b main .
awk 'BEGIN { for (i = 0; i < ${FILES}; i++) { f = "src/f" i ".txt"; for (j = 1; j <= ${LINES}; j++) print "line " j " of file " i " with some text" > f; close(f) } }'
git add -A
git -c user.name=b -c user.email=b@b.invalid commit -q -m base
git rev-parse HEAD
awk 'BEGIN { for (i = 0; i < ${FILES}; i++) { f = "src/f" i ".txt"; for (j = 1; j <= ${LINES}; j++) print (j <= ${CHANGED} ? "changed " : "line ") j " of file " i " with some text" > f; close(f) } }'
`;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mb = (n: number) => `${(n / 1024 / 1024).toFixed(2)} MiB`;

async function onHost(dir: string, base: string, limits: ChangeLimits) {
  const times: number[] = [];
  let answer: Changes | null = null;
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now();
    const boundary = newBoundary();
    const out = await new Deno.Command("sh", {
      args: [
        "-c",
        CHANGES_SCRIPT,
        "lvmh-changes",
        ...changesScriptArgs(boundary, "all", { sha: base, branch: "main" }),
      ],
      cwd: dir,
      stdout: "piped",
    }).output();
    answer = changesFromOutput(new TextDecoder().decode(out.stdout), boundary, { scope: "all", limits });
    times.push(performance.now() - t0);
  }
  return {
    ms: median(times),
    answer: answer!,
    bytes: new TextEncoder().encode(JSON.stringify(answer)).length,
  };
}

function describe(c: Changes): string {
  const withDiff = c.files.filter((f) => f.diff !== undefined).length;
  return `${c.stats.files} files, +${c.stats.additions} -${c.stats.deletions}, ${withDiff} with their diff` +
    (c.truncated ? ", truncated" : "");
}

const dir = await Deno.makeTempDir({ prefix: "lvmh-bench-changes-" });
try {
  await Deno.mkdir(`${dir}/src`);
  const made = await new Deno.Command("sh", { args: ["-c", MAKE], cwd: dir, stdout: "piped" }).output();
  if (!made.success) throw new Error("could not make the repository");
  const base = new TextDecoder().decode(made.stdout).trim();

  console.log(`changes: ${FILES} files changed, ${FILES * CHANGED * 2} changed lines; median of ${ROUNDS}`);
  const rest = await onHost(dir, base, CHANGE_LIMITS);
  console.log(
    `  lib/changes on the host, REST limits: ${rest.ms.toFixed(0)} ms, ${mb(rest.bytes)} (${
      describe(rest.answer)
    })`,
  );
  const plugin = await onHost(dir, base, PLUGIN_CHANGE_LIMITS);
  console.log(
    `  lib/changes on the host, a plugin's one-frame answer: ${plugin.ms.toFixed(0)} ms, ${
      mb(plugin.bytes)
    } (${describe(plugin.answer)})`,
  );

  if (DOCKER_SOCK) {
    const engine = testEngine();
    const id = uniq();
    const image = `lvmh-bench-worker-${id}:latest`;
    const repo = `bench/changes-${id}`;
    const volume = `lvmh-bench-work-${id}`;
    const labels = { "lvmh.managed": "true", "lvmh.repo": repo };
    try {
      await buildStubWorker(engine, image);
      await engine.volumeCreate(volume, labels);
      const fill = await runOnce(engine, image, ["sh", "-c", `cd /workspace && mkdir src && ${MAKE}`], [
        { volume, target: "/workspace" },
      ]);
      if (fill.code !== 0) throw new Error(fill.stderr);
      const sha = fill.stdout.trim();
      const times: number[] = [];
      let answer: Changes | null = null;
      for (let i = 0; i < ROUNDS; i++) {
        const t0 = performance.now();
        const out = await runDiffHelper(engine, {
          image,
          volume,
          scope: "all",
          base: { sha, branch: "main" },
          labels,
        });
        answer = changesFromOutput(out.output, out.boundary, { scope: "all", limits: CHANGE_LIMITS });
        times.push(performance.now() - t0);
      }
      console.log(
        `  diff helper container (real engine), create to parsed answer: ${median(times).toFixed(0)} ms (${
          describe(answer!)
        })`,
      );
    } finally {
      await cleanupDocker(engine, { repos: [repo], images: [image] });
    }
  } else {
    console.log("  diff helper container: skipped (LVMH_TEST_DOCKER_SOCK is not set)");
  }

  // The view: the REST answer served to the page as the daemon would send it.
  await using d = await startDaemon();
  const agent = await connectAgent(d, { sessionId: "bench-changes", session: sessionInfo("bench-changes") });
  const browser = await launchBrowser();
  try {
    const body = JSON.stringify(rest.answer);
    const times: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const ui = await openPage(browser, d, { signIn: true, viewport: { width: 1400, height: 900 } });
      await ui.page.route(
        "**/api/sessions/bench-changes/changes?*",
        (r) => r.fulfill({ status: 200, contentType: "application/json", body }),
      );
      await gotoHydrated(ui, d, "/sessions/bench-changes");
      const t0 = performance.now();
      await ui.page.click("button[data-view='changes']");
      await ui.page.waitForSelector(".changes-view[data-changes='loaded']");
      await ui.page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      times.push(performance.now() - t0);
      const listed = await ui.page.$$eval(".changed-file", (els) => els.length);
      if (listed !== rest.answer.files.length) throw new Error(`listed ${listed} files`);
      await ui.close();
    }
    console.log(
      `  Changes view in Chromium, click to ${rest.answer.files.length} files listed and open diffs painted: ${
        median(times).toFixed(0)
      } ms (answer ${mb(body.length)})`,
    );
  } finally {
    await browser.close();
    await agent.close();
  }
  await waitFor(() => true, "done");
} finally {
  await Deno.remove(dir, { recursive: true });
}
