#!/usr/bin/env node
/**
 * lvmh bridge: runs one headless pi session inside a worker container, with the lvmh-agent plugin loaded,
 * so the daemon can watch and steer it exactly like a terminal session. Uses pi's SDK runtime route
 * (createAgentSessionRuntime), so session_start and session_shutdown fire as in the CLI. Works with the
 * SDK of pi 0.73.1 (modelRegistry) and 1.6.0 (modelRuntime).
 *
 * Environment (the container contract; defaults in brackets):
 *   LVMH_URL, LVMH_TOKEN        the daemon's agent socket and token (read by the plugin)
 *   LVMH_SESSION_ID             the session id the daemon chose; an existing session with it is continued
 *                               (resumed: its own model and thinking level, a torn last line repaired)
 *   LVMH_AGENT=1, LVMH_REPO     put into the plugin's hello (agent: true, repo)
 *   LVMH_MODELS_JSON            provider config, copied into pi's agent dir [/etc/lvmh/models.json]
 *   LVMH_PROVIDER, LVMH_MODEL   model to use [the first model of the first provider in models.json]
 *   LVMH_WORKSPACE              cwd of the session [/workspace]
 *   LVMH_SESSION_DIR            where pi keeps its session files and the plugin its seq files [/pi-sessions]
 *   LVMH_RESUME=1               set by the daemon when it resumes a stopped session
 *   LVMH_READY_FILE             wait for this file before opening the session (set by the daemon, which
 *                               starts the container while it still clones the workspace)
 *   LVMH_PLUGIN_DIR             directory holding lvmh-agent.mjs [next to this file, ../plugin, ../../plugin, /plugin]
 *   LVMH_PI_MODULE              path of the pi SDK entry to use [@mariozechner/pi-coding-agent from here]
 *   PI_CODING_AGENT_DIR         pi's agent dir [~/.pi/agent]
 * Exits 0 on SIGTERM/SIGINT after pi's session_shutdown (the plugin sends `bye`), 1 when it cannot start.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { repairLastLine } from "./session_file.mjs";

const env = process.env;
const here = path.dirname(fileURLToPath(import.meta.url));
const say = (msg) => process.stderr.write(`lvmh-bridge: ${msg}\n`);

/** The plugin file: LVMH_PLUGIN_DIR, else the first of the usual places that exists. */
function findPlugin() {
  const dirs = env.LVMH_PLUGIN_DIR
    ? [env.LVMH_PLUGIN_DIR]
    : [here, path.join(here, "..", "plugin"), path.join(here, "..", "..", "plugin"), "/plugin"];
  for (const dir of dirs) {
    const file = path.join(dir, "lvmh-agent.mjs");
    if (fs.existsSync(file)) return file;
  }
  throw new Error(`lvmh-agent.mjs not found in ${dirs.join(", ")}`);
}

async function loadSdk() {
  if (env.LVMH_PI_MODULE) return await import(pathToFileURL(path.resolve(env.LVMH_PI_MODULE)).href);
  try {
    return await import("@mariozechner/pi-coding-agent");
  } catch {
    return await import("@earendil-works/pi-coding-agent");
  }
}

/** Copy the mounted models.json into the agent dir and pick the provider and model to use. */
function setupModels(agentDir) {
  const source = env.LVMH_MODELS_JSON ?? "/etc/lvmh/models.json";
  let config = null;
  if (fs.existsSync(source)) {
    fs.mkdirSync(agentDir, { recursive: true });
    fs.copyFileSync(source, path.join(agentDir, "models.json"));
    config = JSON.parse(fs.readFileSync(source, "utf8"));
  } else if (fs.existsSync(path.join(agentDir, "models.json"))) {
    config = JSON.parse(fs.readFileSync(path.join(agentDir, "models.json"), "utf8"));
  }
  const [firstProvider, first] = Object.entries(config?.providers ?? {})[0] ?? [];
  const provider = env.LVMH_PROVIDER || firstProvider;
  const models = config?.providers?.[provider]?.models ?? first?.models ?? [];
  const model = env.LVMH_MODEL || models[0]?.id;
  if (!provider || !model) {
    throw new Error(`no provider/model: set LVMH_PROVIDER and LVMH_MODEL, or mount ${source}`);
  }
  return { provider, model };
}

/**
 * A SessionManager for LVMH_SESSION_ID: the existing session file with that id (a resumed session), or a new
 * session. `resumed` says which.
 */
function sessionManagerFor(sdk, cwd, sessionDir) {
  const { SessionManager } = sdk;
  const id = env.LVMH_SESSION_ID;
  fs.mkdirSync(sessionDir, { recursive: true });
  if (id) {
    const existing = fs.readdirSync(sessionDir).filter((f) => f.endsWith(`_${id}.jsonl`)).sort().at(-1);
    if (existing) {
      const file = path.join(sessionDir, existing);
      if (repairLastLine(file)) say("repaired the half-written last line of pi's session file");
      return { sm: SessionManager.open(file, sessionDir), resumed: true };
    }
  }
  // A resumed session without pi's file: pi (0.73.1 writes nothing before the first answer) had not saved
  // it. Its events stay in lvmh; pi starts empty under the same id, and the plugin (which reads pi's
  // environment, this process's) puts a notice in the session's timeline so the person sees it too.
  if (id && env.LVMH_RESUME === "1") {
    say(`pi had not saved this conversation yet: session ${id} starts again with an empty context`);
    env.LVMH_RESUME_NOTICE = "not-saved";
  }
  // pi 1.6.0 takes the id in create(); 0.73.1 ignores the third argument, so newSession() sets it there.
  const sm = SessionManager.create(cwd, sessionDir, id ? { id } : undefined);
  if (id && sm.getSessionId() !== id) sm.newSession({ id });
  return { sm, resumed: false };
}

/** The model a resumed session last used, when models.json still has it (else the configured one is used). */
function sessionModel(sm, services) {
  let saved = null;
  try {
    saved = sm.buildSessionContext().model;
  } catch {
    return null;
  }
  if (!saved) return null;
  return services.modelRuntime?.getModel?.(saved.provider, saved.modelId) ??
    services.modelRegistry?.find?.(saved.provider, saved.modelId) ?? null;
}

/** Make pi's LLM calls honour HTTP(S)_PROXY as its CLI does (the SDK host does not get that set-up). */
async function proxyFromEnv() {
  if (!env.HTTPS_PROXY && !env.HTTP_PROXY && !env.https_proxy && !env.http_proxy) return;
  try {
    const undici = await import("undici");
    undici.setGlobalDispatcher(new undici.EnvHttpProxyAgent({ bodyTimeout: 0, headersTimeout: 0 }));
  } catch (err) {
    say(`proxy set-up skipped: ${err?.message ?? err}`);
  }
}

/** How long the bridge waits for the workspace before it gives up (a clone of a large repository). */
const READY_TIMEOUT_MS = 15 * 60_000;

/** Resolve once `file` exists; exit with an error after `timeoutMs`. */
async function waitForFile(file, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (!fs.existsSync(file)) {
    if (Date.now() > deadline) {
      say(`the workspace was not ready after ${timeoutMs / 1000} s (${file} missing)`);
      process.exit(1);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function main() {
  env.PI_OFFLINE ??= "1";
  env.PI_SKIP_VERSION_CHECK ??= "1";
  env.PI_TELEMETRY ??= "0";
  const cwd = path.resolve(env.LVMH_WORKSPACE ?? "/workspace");
  const sessionDir = path.resolve(env.LVMH_SESSION_DIR ?? "/pi-sessions");
  // The plugin's seq counters live beside the sessions, so they survive a new container for the same session.
  env.LVMH_STATE_DIR ??= path.join(sessionDir, ".lvmh-agent");
  const plugin = findPlugin();
  if (typeof globalThis.WebSocket !== "function") {
    // Node 20: hand the plugin our own `ws`, since the plugin directory may come without node_modules.
    const ws = await import("ws");
    globalThis[Symbol.for("lvmh-agent.WebSocket")] = ws.WebSocket ?? ws.default;
  }
  await proxyFromEnv();
  const sdk = await loadSdk();
  // The daemon starts this container while it still clones or pulls the repository, so loading pi overlaps
  // git; the session, which reads the workspace, opens once the daemon drops the ready file.
  if (env.LVMH_READY_FILE) await waitForFile(env.LVMH_READY_FILE, READY_TIMEOUT_MS);
  const agentDir = sdk.getAgentDir();
  const { provider, model: modelId } = setupModels(agentDir);

  const { sm: sessionManager, resumed } = sessionManagerFor(sdk, cwd, sessionDir);
  const createRuntime = async ({ cwd, agentDir, sessionManager, sessionStartEvent }) => {
    const services = await sdk.createAgentSessionServices({
      cwd,
      agentDir,
      resourceLoaderOptions: { additionalExtensionPaths: [plugin], noExtensions: true },
    });
    // A resumed session keeps the model and thinking level it had: passing either would override what its
    // file says, silently. Only a model that left models.json is replaced by the configured one.
    const own = resumed && sessionModel(sessionManager, services);
    const chosen = own ? {} : {
      model: services.modelRuntime?.getModel?.(provider, modelId) ??
        services.modelRegistry?.find?.(provider, modelId),
      ...(resumed ? {} : { thinkingLevel: "off" }),
    };
    if (!own && !chosen.model) throw new Error(`model ${provider}/${modelId} is not in models.json`);
    const created = await sdk.createAgentSessionFromServices({
      services,
      sessionManager,
      sessionStartEvent,
      ...chosen,
    });
    return { ...created, services, diagnostics: services.diagnostics };
  };
  const runtime = await sdk.createAgentSessionRuntime(createRuntime, {
    cwd,
    agentDir,
    sessionManager,
    // The plugin (and any extension) can tell a worker that reopened its session from a first start.
    ...(resumed ? { sessionStartEvent: { type: "session_start", reason: "resume" } } : {}),
  });
  for (const d of runtime.diagnostics ?? []) say(`${d.type}: ${d.message}`);
  if ((runtime.diagnostics ?? []).some((d) => d.type === "error")) {
    throw new Error("pi reported errors at start-up");
  }

  // Nothing else may keep the process alive while the daemon is unreachable (the plugin's timers are unref'd).
  const keepAlive = setInterval(() => {}, 1 << 30);
  let stopping = null;
  const stop = (code) => {
    stopping ??= (async () => {
      const force = setTimeout(() => process.exit(code), 10_000);
      try {
        await runtime.dispose(); // session_shutdown: the plugin sends bye and waits (bounded) for the daemon
      } catch (err) {
        say(`shutdown: ${err?.message ?? err}`);
      }
      clearTimeout(force);
      clearInterval(keepAlive);
      process.exit(code);
    })();
    return stopping;
  };
  const bind = async () => {
    await runtime.session.bindExtensions({
      shutdownHandler: () => void stop(0),
      onError: (e) => say(`extension error (${e.event}): ${e.error}`),
    });
  };
  runtime.setRebindSession(bind);
  await bind();
  process.on("SIGTERM", () => void stop(0));
  process.on("SIGINT", () => void stop(0));
  const m = runtime.session.model;
  const using = m ? `${m.provider}/${m.id}` : `${provider}/${modelId}`;
  const how = resumed ? "resumed" : "ready";
  say(`session ${runtime.session.sessionManager.getSessionId()} ${how} in ${cwd} with ${using}`);
}

main().catch((err) => {
  say(`cannot start: ${err?.stack ?? err}`);
  process.exit(1);
});
