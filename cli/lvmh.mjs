#!/usr/bin/env node
/**
 * lvmh: the command-line client of the lvmh daemon (Node >= 20, no dependencies).
 * Exit codes: 0 ok, 1 the daemon refused (its error is printed), 2 bad usage, 3 cannot reach the daemon.
 */
import process from "node:process";
import { Buffer } from "node:buffer";
import { parseArgs } from "node:util";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { extname, join } from "node:path";

const DEFAULT_URL = "http://127.0.0.1:8686";
/** A stream silent for this long (the daemon sends a comment every 15 s) counts as dead. */
const STALL_MS = 45_000;
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 5000;

class CliError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}
const usage = (message) => new CliError(2, message);

const HELP = {
  "": `lvmh: watch and steer pi sessions through an lvmh daemon.

Usage: lvmh [--url URL] [--token TOKEN] COMMAND [ARGS]

Commands:
  login [URL] [--token T]           check the token and save URL and token to the config file
  sessions [--online] [--json]      list sessions
  tail ID [-f] [--from SEQ] [--json]  show a session's conversation (-f: follow it live)
  prompt ID TEXT [--follow-up] [--image FILE]...   send a message (TEXT "-" reads stdin)
  abort ID                          abort the current run
  approvals [--json]                list the tool calls waiting for a person
  approve ID [--reason R]           let a waiting tool call run
  reject ID [--reason R]            refuse it
  spawn GROUP/PROJECT [--branch B] [--ask bash,edit|all|none]   start a session in a container
  stop ID                           stop a spawned session's container
  token add NAME --role ROLE | token list [--json] | token revoke NAME   named tokens (admin)

Configuration: --url/--token, else LVMH_URL and LVMH_TOKEN, else the file written by "lvmh login"
($XDG_CONFIG_HOME/lvmh/config.json, default ~/.config/lvmh/config.json). LVMH_URL is the daemon's
http(s) base; the plugin's ws://HOST:PORT/agent/ws form works too. Default ${DEFAULT_URL}.
--json prints one JSON object per line. Exit codes: 0 ok, 1 the daemon refused, 2 bad usage,
3 cannot reach the daemon. "lvmh COMMAND --help" tells more.`,
  login: `Usage: lvmh login [URL] [--token TOKEN]
Checks the token against the daemon, then writes URL and token to the config file (mode 600).
Without --token it uses LVMH_TOKEN, else reads one line from stdin.`,
  sessions: `Usage: lvmh sessions [--online] [--json]
Lists sessions, most recent activity first: id, state, name, repo or cwd, model, last activity and how
many approvals wait. --online shows only sessions with a live pi; --json prints each session as JSON.`,
  tail: `Usage: lvmh tail ID [-f|--follow] [--from SEQ] [--json]
Prints a session's conversation: roles, tool calls with their status, run ends. Without --from, the
latest page (1,000 events); --from SEQ starts at event SEQ (0: from the start). -f keeps following,
streaming text as it arrives, and reconnects through daemon restarts without repeating or skipping an
event. --json prints each event (the whole envelope) as one JSON line instead.`,
  prompt: `Usage: lvmh prompt ID TEXT [--follow-up] [--image FILE]... [--json]
Sends TEXT ("-": read it from stdin) to the session: as a steer by default, or as a follow-up once the
current run ends. --image attaches a PNG, JPEG, GIF or WebP file (repeatable). Prints the prompt id.`,
  abort: `Usage: lvmh abort ID
Aborts the session's current run.`,
  approvals: `Usage: lvmh approvals [--json]
Lists the tool calls waiting for a person, oldest first.`,
  approve: `Usage: lvmh approve APPROVAL_ID [--reason R] [--json]
Approves a waiting tool call; the first answer wins.`,
  reject: `Usage: lvmh reject APPROVAL_ID [--reason R] [--json]
Rejects a waiting tool call; the agent gets the reason.`,
  spawn: `Usage: lvmh spawn GROUP/PROJECT [--branch B] [--ask bash,edit|all|none] [--json]
Starts a session in a container from a GitLab repository. Prints the new session's id once it runs.`,
  stop: `Usage: lvmh stop ID
Stops and removes a spawned session's container (its history stays).`,
  token: `Usage: lvmh token add NAME --role admin|operator|viewer|agent
       lvmh token list [--json]
       lvmh token revoke NAME
Named tokens (needs an admin token). "add" prints the new token once.`,
};

// ---------------------------------------------------------------------------------------------
// Configuration and HTTP

/** The config file path: $XDG_CONFIG_HOME/lvmh/config.json or ~/.config/lvmh/config.json. */
function configPath() {
  return join(
    process.env.XDG_CONFIG_HOME || join(homedir(), ".config"),
    "lvmh",
    "config.json",
  );
}

async function readConfigFile() {
  try {
    return JSON.parse(await readFile(configPath(), "utf8"));
  } catch {
    return {};
  }
}

/** The daemon's http(s) base from any accepted form (`ws://h:p/agent/ws` included). */
function normaliseUrl(raw) {
  let url;
  try {
    url = new URL(raw);
  } catch {
    throw usage(`not a URL: ${raw}`);
  }
  if (url.protocol === "ws:") url.protocol = "http:";
  else if (url.protocol === "wss:") url.protocol = "https:";
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw usage(`not an http(s) URL: ${raw}`);
  }
  const path = url.pathname.replace(/\/agent\/ws\/?$|\/ws\/?$/, "").replace(
    /\/+$/,
    "",
  );
  return url.origin + path;
}

async function loadConfig(globals) {
  const file = await readConfigFile();
  const env = (name) => process.env[name] || undefined;
  return {
    url: normaliseUrl(
      globals.url ?? env("LVMH_URL") ?? file.url ?? DEFAULT_URL,
    ),
    token: globals.token ?? env("LVMH_TOKEN") ?? file.token ?? null,
  };
}

function headersFor(cfg, extra = {}) {
  const h = { ...extra };
  if (cfg.token) h.authorization = `Bearer ${cfg.token}`;
  return h;
}

function unreachable(cfg, error) {
  const cause = error?.cause?.code ?? error?.cause?.message ?? error?.message ??
    String(error);
  return new CliError(3, `cannot reach the daemon at ${cfg.url}: ${cause}`);
}

async function refusal(res) {
  const text = await res.text().catch(() => "");
  let message = `HTTP ${res.status}`;
  try {
    message = JSON.parse(text).error ?? message;
  } catch { /* not JSON */ }
  if (res.status === 401) message += " (set LVMH_TOKEN or run lvmh login)";
  return new CliError(1, message);
}

/** One REST call; the parsed JSON answer, or a CliError (1 refused, 3 unreachable). */
async function api(cfg, method, path, body) {
  let res;
  try {
    res = await fetch(cfg.url + path, {
      method,
      headers: headersFor(
        cfg,
        body === undefined ? {} : { "content-type": "application/json" },
      ),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    throw unreachable(cfg, error);
  }
  if (!res.ok) throw await refusal(res);
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

const enc = encodeURIComponent;

// ---------------------------------------------------------------------------------------------
// Output

function printJsonLines(items) {
  for (const item of items) process.stdout.write(JSON.stringify(item) + "\n");
}

/** Print rows as a table with aligned columns (the last column is not padded). */
function printTable(header, rows) {
  const all = [header, ...rows].map((r) => r.map((c) => String(c ?? "")));
  const widths = header.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  for (const r of all) {
    process.stdout.write(
      r.map((c, i) => i === r.length - 1 ? c : c.padEnd(widths[i])).join("  ") +
        "\n",
    );
  }
}

function ago(ms) {
  if (!ms) return "never";
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

function short(text, max = 120) {
  const one = String(text ?? "").replace(/\s+/g, " ").trim();
  return one.length > max ? one.slice(0, max - 1) + "…" : one;
}

/** Renders events for a terminal; keeps track of streamed text so a message is never printed twice. */
function createRenderer(write) {
  let streamed = null;
  const endStream = () => {
    if (streamed !== null) write("\n");
    streamed = null;
  };
  return function render(e) {
    switch (e.type) {
      case "message_update": {
        if (e.kind === "thinking") return;
        if (streamed === null) {
          write("assistant: ");
          streamed = "";
        }
        streamed += e.delta ?? "";
        write(e.delta ?? "");
        return;
      }
      case "message_end": {
        const m = e.message ?? {};
        const text = m.text ?? "";
        if (
          m.role === "assistant" && streamed !== null &&
          text.startsWith(streamed)
        ) {
          write(text.slice(streamed.length) + "\n");
          streamed = null;
          return;
        }
        endStream();
        if (m.role === "toolResult") return; // shown by tool_execution_end
        if (text) write(`${m.role}: ${text}\n`);
        return;
      }
      case "tool_execution_start":
        endStream();
        write(`  > ${e.toolName} ${short(JSON.stringify(e.args ?? {}))}\n`);
        return;
      case "tool_execution_end":
        endStream();
        write(
          `  ${e.isError ? "x" : "ok"} ${e.toolName}${e.isError ? `: ${short(e.resultPreview)}` : ""}\n`,
        );
        return;
      case "approval_request":
        endStream();
        write(
          `  ? ${e.toolName} waits for approval: lvmh approve ${e.approvalId}\n`,
        );
        return;
      case "approval_resolved":
        write(
          `  ${e.decision === "approve" ? "approved" : "rejected"} by ${e.by ?? "?"} (${e.source ?? ""})\n`,
        );
        return;
      case "agent_end": {
        endStream();
        const u = e.usage ?? {};
        const tokens = u.inputTokens !== undefined
          ? ` (${u.inputTokens} in, ${u.outputTokens ?? 0} out)`
          : "";
        write(`-- run ended${tokens} --\n`);
        return;
      }
      case "bye":
        endStream();
        write(`-- session ended: ${e.reason ?? ""} --\n`);
        return;
      case "buffer_overflow":
        write(`!! the plugin lost ${e.dropped} events\n`);
        return;
      default:
        return;
    }
  };
}

// ---------------------------------------------------------------------------------------------
// Server-Sent Events

/** An incremental `text/event-stream` parser: feed it text, it calls `onEvent({id, event, data})`. */
function createSseParser(onEvent) {
  let buf = "";
  let cur = { id: null, event: "message", data: [] };
  const line = (l) => {
    if (l === "") {
      if (cur.data.length) {
        onEvent({ id: cur.id, event: cur.event, data: cur.data.join("\n") });
      }
      cur = { id: null, event: "message", data: [] };
      return;
    }
    if (l.startsWith(":")) return;
    const at = l.indexOf(":");
    const field = at < 0 ? l : l.slice(0, at);
    const value = at < 0 ? "" : l.slice(at + 1).replace(/^ /, "");
    if (field === "id") cur.id = value;
    else if (field === "event") cur.event = value;
    else if (field === "data") cur.data.push(value);
  };
  return (text) => {
    buf += text;
    const parts = buf.split(/\r\n|\n|\r(?!$)/);
    buf = parts.pop();
    for (const p of parts) line(p);
  };
}

/**
 * Follow a session's stream, reconnecting with Last-Event-ID through outages; resolves when the session
 * is deleted. The first connection failing is an error (3 unreachable, 1 refused); later ones are retried.
 */
async function follow(cfg, id, initialQuery, onEvent) {
  let lastId = null;
  let connected = false;
  let delay = RETRY_MIN_MS;
  let notified = false;
  while (true) {
    const abort = new AbortController();
    let stall;
    const arm = () => {
      clearTimeout(stall);
      stall = setTimeout(() => abort.abort(), STALL_MS);
    };
    try {
      arm();
      const headers = headersFor(cfg, { accept: "text/event-stream" });
      if (lastId !== null) headers["last-event-id"] = lastId;
      let res;
      try {
        res = await fetch(
          `${cfg.url}/api/sessions/${enc(id)}/stream${lastId === null ? initialQuery : ""}`,
          {
            headers,
            signal: abort.signal,
          },
        );
      } catch (error) {
        if (!connected) throw unreachable(cfg, error);
        throw error;
      }
      if (!res.ok) {
        // Once following, a 5xx or 429 is the daemon (or a proxy in front of it) not back yet: retry.
        if (connected && (res.status >= 500 || res.status === 429)) {
          await res.body?.cancel();
          throw new Error(`HTTP ${res.status}`);
        }
        throw await refusal(res);
      }
      // Until a persisted event is shown (a session without events yet), a reconnect asks for all from the
      // start: the latest page again could skip what came meanwhile.
      if (lastId === null && !initialQuery) initialQuery = "?after=0";
      connected = true;
      delay = RETRY_MIN_MS;
      if (notified) process.stderr.write("lvmh: reconnected\n");
      notified = false;
      let deleted = false;
      const parse = createSseParser((msg) => {
        if (msg.event === "session_deleted") deleted = true;
        else {
          if (msg.id !== null && msg.id !== "") lastId = msg.id;
          onEvent(JSON.parse(msg.data));
        }
      });
      const decoder = new TextDecoder();
      for await (const chunk of res.body) {
        arm();
        parse(decoder.decode(chunk, { stream: true }));
        if (deleted) {
          process.stderr.write(`lvmh: session ${id} was deleted\n`);
          return;
        }
      }
    } catch (error) {
      if (error instanceof CliError) throw error;
    } finally {
      clearTimeout(stall);
      abort.abort();
    }
    if (!notified) {
      process.stderr.write("lvmh: connection lost, reconnecting…\n");
    }
    notified = true;
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(RETRY_MAX_MS, delay * 2);
  }
}

// ---------------------------------------------------------------------------------------------
// Commands

/** Parse a command's arguments; unknown options are a usage error. */
function parse(args, options) {
  try {
    return parseArgs({
      args,
      options: { ...options, help: { type: "boolean" } },
      allowPositionals: true,
    });
  } catch (error) {
    throw usage(error.message);
  }
}

function need(values, n, names) {
  if (values.length !== n) {
    throw usage(`expected ${names}, got ${values.length} argument(s)`);
  }
  return values;
}

const MIME = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
};

async function readStdin() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return Buffer.concat(chunks).toString("utf8");
}

const commands = {
  async login(cfg, args) {
    const { values, positionals } = parse(args, { token: { type: "string" } });
    if (positionals.length > 1) throw usage("expected at most a URL");
    const url = positionals[0] ? normaliseUrl(positionals[0]) : cfg.url;
    let token = values.token ?? process.env.LVMH_TOKEN;
    if (!token) token = (await readStdin()).split(/\r?\n/)[0].trim();
    if (!token) {
      throw usage("no token: pass --token, set LVMH_TOKEN or pipe it on stdin");
    }
    await api({ url, token }, "GET", "/api/sessions");
    const path = configPath();
    await mkdir(join(path, ".."), { recursive: true, mode: 0o700 });
    await writeFile(path, JSON.stringify({ url, token }, null, 2) + "\n", {
      mode: 0o600,
    });
    process.stdout.write(`logged in to ${url} (saved in ${path})\n`);
  },

  async sessions(cfg, args) {
    const { values, positionals } = parse(args, {
      online: { type: "boolean" },
      json: { type: "boolean" },
    });
    need(positionals, 0, "no arguments");
    let list = await api(cfg, "GET", "/api/sessions");
    if (values.online) list = list.filter((s) => s.online);
    if (values.json) return printJsonLines(list);
    printTable(
      ["ID", "STATE", "NAME", "WHERE", "MODEL", "LAST ACTIVITY", "WAITING"],
      list.map((s) => [
        s.id,
        s.online ? s.state : "offline",
        short(s.name ?? "", 40),
        s.repo ?? s.cwd ?? "",
        s.model ?? "",
        ago(s.lastEventAt ?? s.startedAt),
        s.waiting ?? 0,
      ]),
    );
  },

  async tail(cfg, args) {
    const { values, positionals } = parse(args, {
      follow: { type: "boolean", short: "f" },
      from: { type: "string" },
      json: { type: "boolean" },
    });
    const [id] = need(positionals, 1, "a session id");
    let from = null;
    if (values.from !== undefined) {
      from = Number(values.from);
      if (!Number.isSafeInteger(from) || from < 0) {
        throw usage("--from takes a non-negative integer");
      }
    }
    const render = createRenderer((s) => process.stdout.write(s));
    const show = values.json ? (e) => process.stdout.write(JSON.stringify(e) + "\n") : render;
    const after = from === null ? null : Math.max(0, from - 1);
    if (values.follow) {
      return await follow(
        cfg,
        id,
        after === null ? "" : `?after=${after}`,
        show,
      );
    }
    if (after === null) {
      for (
        const e of await api(
          cfg,
          "GET",
          `/api/sessions/${enc(id)}/events?before=${Number.MAX_SAFE_INTEGER}`,
        )
      ) {
        show(e);
      }
    } else {
      let cursor = after;
      while (true) {
        const page = await api(
          cfg,
          "GET",
          `/api/sessions/${enc(id)}/events?after=${cursor}&limit=1000`,
        );
        for (const e of page) show(e);
        if (page.length < 1000) break;
        cursor = page[page.length - 1].seq;
      }
    }
  },

  async prompt(cfg, args) {
    const { values, positionals } = parse(args, {
      "follow-up": { type: "boolean" },
      image: { type: "string", multiple: true },
      json: { type: "boolean" },
    });
    const [id, text] = need(positionals, 2, "a session id and the text");
    const message = text === "-" ? await readStdin() : text;
    const body = {
      message,
      deliverAs: values["follow-up"] ? "followUp" : "steer",
    };
    if (values.image?.length) {
      body.images = [];
      for (const file of values.image) {
        const mimeType = MIME[extname(file).toLowerCase()];
        if (!mimeType) {
          throw usage(`${file}: only .png, .jpg, .gif and .webp images`);
        }
        let data;
        try {
          data = (await readFile(file)).toString("base64");
        } catch (error) {
          throw usage(`cannot read ${file}: ${error.message}`);
        }
        body.images.push({ mimeType, data });
      }
    }
    const res = await api(cfg, "POST", `/api/sessions/${enc(id)}/prompt`, body);
    process.stdout.write(
      values.json ? JSON.stringify(res) + "\n" : `${res.promptId}\n`,
    );
  },

  async abort(cfg, args) {
    const { positionals } = parse(args, {});
    const [id] = need(positionals, 1, "a session id");
    await api(cfg, "POST", `/api/sessions/${enc(id)}/abort`, {});
  },

  async approvals(cfg, args) {
    const { values, positionals } = parse(args, { json: { type: "boolean" } });
    need(positionals, 0, "no arguments");
    const list = await api(cfg, "GET", "/api/approvals?state=pending");
    if (values.json) return printJsonLines(list);
    printTable(
      ["ID", "SESSION", "TOOL", "WAITING SINCE", "ARGS"],
      list.map((
        a,
      ) => [
        a.id,
        a.sessionId,
        a.toolName,
        ago(a.createdAt),
        short(JSON.stringify(a.args), 80),
      ]),
    );
  },

  approve: (cfg, args) => decide(cfg, args, "approve"),
  reject: (cfg, args) => decide(cfg, args, "reject"),

  async spawn(cfg, args) {
    const { values, positionals } = parse(args, {
      branch: { type: "string" },
      ask: { type: "string" },
      json: { type: "boolean" },
    });
    const [repo] = need(positionals, 1, "GROUP/PROJECT");
    const body = { repo };
    if (values.branch) body.branch = values.branch;
    if (values.ask !== undefined) {
      body.ask = values.ask === "all"
        ? "all"
        : values.ask === "none" || values.ask === ""
        ? []
        : values.ask.split(",").map((s) => s.trim()).filter(Boolean);
    }
    const res = await api(cfg, "POST", "/api/spawn", body);
    process.stdout.write(
      values.json ? JSON.stringify(res) + "\n" : `${res.sessionId}\n`,
    );
  },

  async stop(cfg, args) {
    const { positionals } = parse(args, {});
    const [id] = need(positionals, 1, "a session id");
    await api(cfg, "DELETE", `/api/sessions/${enc(id)}/container`);
  },

  async token(cfg, args) {
    const { values, positionals } = parse(args, {
      role: { type: "string" },
      json: { type: "boolean" },
    });
    const [sub, ...rest] = positionals;
    if (sub === "list") {
      need(rest, 0, "no arguments after list");
      const list = await api(cfg, "GET", "/api/tokens");
      if (values.json) return printJsonLines(list);
      return printTable(
        ["NAME", "ROLE", "CREATED", "LAST USED", "REVOKED"],
        list.map((
          t,
        ) => [
          t.name,
          t.role,
          ago(t.createdAt),
          ago(t.lastUsedAt),
          t.revokedAt ? ago(t.revokedAt) : "-",
        ]),
      );
    }
    if (sub === "add") {
      const [name] = need(rest, 1, "a token name");
      if (!values.role) {
        throw usage("token add needs --role admin|operator|viewer|agent");
      }
      const res = await api(cfg, "POST", "/api/tokens", {
        name,
        role: values.role,
      });
      return process.stdout.write(
        values.json ? JSON.stringify(res) + "\n" : `${res.token}\n`,
      );
    }
    if (sub === "revoke") {
      const [name] = need(rest, 1, "a token name");
      return await api(cfg, "DELETE", `/api/tokens/${enc(name)}`);
    }
    throw usage("expected token add, token list or token revoke");
  },
};

async function decide(cfg, args, decision) {
  const { values, positionals } = parse(args, {
    reason: { type: "string" },
    json: { type: "boolean" },
  });
  const [id] = need(positionals, 1, "an approval id");
  const body = { decision };
  if (values.reason) body.reason = values.reason;
  const res = await api(cfg, "POST", `/api/approvals/${enc(id)}`, body);
  process.stdout.write(
    values.json ? JSON.stringify(res) + "\n" : `${res.state ?? decision}\n`,
  );
}

/** Run the CLI with `argv` (without node and the script); resolves with the exit code. */
async function main(argv) {
  // Global options come before the command.
  const globals = {};
  let i = 0;
  for (; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--url" || a === "--token") {
      if (argv[i + 1] === undefined) return fail(usage(`${a} needs a value`));
      globals[a.slice(2)] = argv[++i];
    } else if (a.startsWith("--url=") || a.startsWith("--token=")) {
      const [k, ...v] = a.slice(2).split("=");
      globals[k] = v.join("=");
    } else break;
  }
  const [name, ...args] = argv.slice(i);
  if (!name || name === "--help" || name === "-h" || name === "help") {
    (name ? process.stdout : process.stderr).write(HELP[""] + "\n");
    return name ? 0 : 2;
  }
  const command = Object.hasOwn(commands, name) ? commands[name] : null;
  if (!command) return fail(usage(`unknown command "${name}"`));
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(HELP[name] + "\n");
    return 0;
  }
  try {
    await command(await loadConfig(globals), args);
    return 0;
  } catch (error) {
    return fail(error);
  }
}

function fail(error) {
  if (!(error instanceof CliError)) {
    process.stderr.write(`lvmh: ${error?.stack ?? error}\n`);
    return 1;
  }
  process.stderr.write(`lvmh: ${error.message}\n`);
  if (error.code === 2) process.stderr.write(`see lvmh --help\n`);
  return error.code;
}

// exitCode, not exit(): a piped stdout still gets everything written.
process.exitCode = await main(process.argv.slice(2));
