/**
 * lvmh-agent: a pi extension that mirrors one pi session to an lvmh daemon (protocol v1, Transport 1) and lets
 * the daemon steer it (`prompt`, `abort`). One Node-compatible ESM file that imports nothing from pi, so the
 * same file loads in pi 0.73.1 and 1.6.0.
 *
 * Configuration (environment): LVMH_URL (ws://host:8686/agent/ws) and LVMH_TOKEN, both required, else the
 * plugin registers nothing and pi works as usual; LVMH_AGENT=1 inside a container the daemon spawned;
 * LVMH_REPO (group/project) from the spawn metadata, else read best effort from the cwd's git remote;
 * LVMH_STATE_DIR for the per-session seq files [~/.pi/lvmh-agent]; LVMH_DISABLED=1 turns it off.
 *
 * Rules it keeps: handlers return at once (pi awaits them inside its event queue); socket I/O happens later,
 * from a bounded buffer; reconnects forever; errors go to ~/.pi/lvmh-agent.log and never reach pi.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const PROTOCOL_VERSION = 1;
/** Unacknowledged events kept in memory; past this the oldest are dropped and reported. */
const MAX_BUFFER = 10_000;
/** ...and the characters they may hold (tool output is large): about 64 MB of strings at most. */
const MAX_BUFFER_CHARS = 32_000_000;
/** Approximate size of a buffered event, kept under a symbol so JSON.stringify leaves it out. */
const SIZE = Symbol("size");
const PREVIEW_CHARS = 2048;
const MAX_TEXT = 100_000;
/** The daemon closes a socket on frames over 1 MiB; a frame over this many UTF-16 units is shrunk first. */
const MAX_FRAME_CHARS = 330_000;
const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 30_000;
/** After close code 4000 (a newer socket took over this session) back off from here, not from the minimum. */
const REPLACED_MIN_MS = 5_000;
const WELCOME_TIMEOUT_MS = 10_000;
const SEND_BATCH = 256;
const HIGH_WATER_BYTES = 1 << 20;
const TOOL_UPDATE_MS = 200;
const POLL_MS = 10;
const START_WAIT_MS = 2_000;
const SHUTDOWN_WAIT_MS = 1_500;
const SEQ_WRITE_MS = 300;
const RENAME_POLL_MS = 3_000;
const LOG_MAX_BYTES = 1 << 20;
/** A session untouched this long will not be continued with `pi -c`; its seq file goes. */
const SEQ_KEEP_MS = 180 * 24 * 3600 * 1000;
const STATE = Symbol.for("lvmh-agent.state");

const later = typeof setImmediate === "function" ? setImmediate : (f) => setTimeout(f, 0);

/** Keep a timer from holding pi's process open (pi's print mode exits when its event loop drains). */
function unref(timer) {
  if (typeof timer === "object" && timer !== null) timer.unref?.();
  else if (typeof globalThis.Deno?.unrefTimer === "function") {
    globalThis.Deno.unrefTimer(timer);
  }
  return timer;
}

/** State shared by every factory run in this process (pi re-runs the factory on /new, /resume, /reload). */
function globalState() {
  globalThis[STATE] ??= { links: new Map(), ctor: null, loggers: new Map() };
  return globalThis[STATE];
}

/** A batched, size-bounded appender to the log file that never writes `secret`; never throws. */
function makeLogger(file, secret) {
  const g = globalState();
  const key = `${file}\0${secret}`;
  if (g.loggers.has(key)) return g.loggers.get(key);
  let lines = [];
  let timer = null;
  const write = () => {
    timer = null;
    const data = lines.join("");
    lines = [];
    fs.promises.mkdir(path.dirname(file), { recursive: true })
      .then(() => fs.promises.appendFile(file, data, { mode: 0o600 }))
      .catch(() => {});
  };
  const log = (msg, err) => {
    try {
      if (lines.length >= 1000) return;
      const detail = err ? `: ${err?.stack ?? err}` : "";
      let line = `${new Date().toISOString()} [${process.pid}] ${msg}${detail}\n`;
      // A token can reach a message through a URL (LVMH_URL with ?token=, an error that quotes it).
      if (secret && secret.length >= 6) line = line.split(secret).join("***");
      lines.push(line.replace(/([?&]token=)[^&\s"']+/gi, "$1***"));
      timer ??= unref(setTimeout(write, 100));
    } catch { /* logging must never fail pi */ }
  };
  log.flushSync = () => {
    try {
      if (timer) clearTimeout(timer);
      timer = null;
      if (!lines.length) return;
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.appendFileSync(file, lines.join(""), { mode: 0o600 });
      lines = [];
    } catch { /* ignore */ }
  };
  g.loggers.set(key, log);
  return log;
}

/** The WebSocket class: the platform's (Node ≥ 22, Deno), else one the host gave, else the `ws` package. */
function webSocketClass() {
  const g = globalState();
  if (typeof globalThis.WebSocket === "function") {
    return Promise.resolve(globalThis.WebSocket);
  }
  // A host may hand over a WebSocket class (the container bridge does, from its own `ws`).
  const given = globalThis[Symbol.for("lvmh-agent.WebSocket")];
  if (typeof given === "function") return Promise.resolve(given);
  g.ctor ??= import("ws").then((m) => m.WebSocket ?? m.default);
  return g.ctor;
}

// ---------------------------------------------------------------------------------------------
// Mapping pi data to protocol shapes

function clip(s, n = MAX_TEXT) {
  return typeof s === "string" && s.length > n ? s.slice(0, n - 1) + "…" : s;
}

/** Text of pi content (a string or an array of text/image/thinking/toolCall parts). */
function contentText(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  let out = "";
  for (const part of content) {
    if (part?.type === "text") out += part.text ?? "";
    else if (part?.type === "image") out += "[image]";
  }
  return out;
}

const ROLES = new Set(["user", "assistant", "toolResult", "system"]);

/** The protocol role for a pi message role: pi's extra roles map onto the four the protocol knows. */
function mapRole(role) {
  return ROLES.has(role) ? role : role === "bashExecution" ? "user" : "system";
}

/**
 * A pi AgentMessage as the protocol's Message shape; pi's extra roles are mapped onto the four known ones.
 * @param {any} m the pi message
 * @param {string} id the message id to use
 * @returns {Record<string, any>}
 */
export function toMessage(m, id) {
  const role = mapRole(m?.role);
  let text = "";
  let thinking = null;
  const toolCalls = [];
  if (m?.role === "assistant" && Array.isArray(m.content)) {
    for (const part of m.content) {
      if (part?.type === "text") text += part.text ?? "";
      else if (part?.type === "thinking") {
        thinking = (thinking ?? "") + (part.thinking ?? "");
      } else if (part?.type === "toolCall") {
        let argsJson;
        try {
          argsJson = JSON.stringify(part.arguments ?? {});
        } catch {
          argsJson = "{}";
        }
        toolCalls.push({
          id: String(part.id ?? ""),
          name: String(part.name ?? ""),
          argsJson: clip(argsJson),
        });
      }
    }
  } else if (m?.role === "bashExecution") {
    text = `!${m.command ?? ""}\n${m.output ?? ""}`;
  } else if (typeof m?.summary === "string") {
    text = m.summary;
  } else {
    text = contentText(m?.content);
  }
  const out = {
    role,
    id,
    text: clip(text),
    thinking: clip(thinking),
    toolCalls,
    toolCallId: m?.role === "toolResult" ? String(m.toolCallId ?? "") : null,
  };
  if (role !== m?.role) out.piRole = String(m?.role ?? "");
  if (m?.role === "assistant") {
    if (m.stopReason) out.stopReason = m.stopReason;
    if (m.errorMessage) {
      out.errorMessage = clip(String(m.errorMessage), PREVIEW_CHARS);
    }
  }
  if (m?.role === "toolResult") {
    out.toolName = String(m.toolName ?? "");
    out.isError = !!m.isError;
  }
  return out;
}

/** Text of a tool result (`{content}` or a string), cut to `n` characters from the start or the end. */
function resultText(result, n, fromEnd = false) {
  const text = typeof result === "string" ? result : contentText(result?.content);
  if (text.length <= n) return text;
  return fromEnd ? "…" + text.slice(text.length - n + 1) : text.slice(0, n - 1) + "…";
}

/** A detached copy of tool arguments (pi's object may change after the handler returns), or a preview. */
function safeArgs(args) {
  try {
    const json = JSON.stringify(args ?? {});
    if (json.length > MAX_TEXT) return { args: { truncated: true, preview: clip(json) }, size: MAX_TEXT };
    return { args: JSON.parse(json), size: json.length };
  } catch {
    return { args: { unserializable: true }, size: 30 };
  }
}

/** group/project from a git remote URL (scp-like, ssh:// or http(s)://), or null. */
export function repoFromRemote(url) {
  const m = /^(?:[a-z+]+:\/\/(?:[^@/]+@)?[^/]+\/|[^@/\s]+@[^:/\s]+:)(.+?)(?:\.git)?\/?$/i
    .exec(url.trim());
  const repo = m?.[1].replace(/^\/+/, "");
  return repo &&
      /^[A-Za-z0-9_][A-Za-z0-9_.-]*(?:\/[A-Za-z0-9_][A-Za-z0-9_.-]*)+$/.test(repo)
    ? repo
    : null;
}

/** Best effort: the `origin` remote of the git repository containing `cwd`, as group/project. */
function repoFromGit(cwd) {
  try {
    let dir = path.resolve(cwd);
    for (let i = 0; i < 30; i++) {
      const dotGit = path.join(dir, ".git");
      let stat = null;
      try {
        stat = fs.statSync(dotGit);
      } catch { /* not here */ }
      if (stat) {
        let gitDir = dotGit;
        if (stat.isFile()) {
          const ref = /^gitdir:\s*(.+)$/m.exec(fs.readFileSync(dotGit, "utf8"));
          if (!ref) return null;
          gitDir = path.resolve(dir, ref[1].trim());
          const common = path.join(gitDir, "commondir");
          if (fs.existsSync(common)) {
            gitDir = path.resolve(gitDir, fs.readFileSync(common, "utf8").trim());
          }
        }
        const config = fs.readFileSync(path.join(gitDir, "config"), "utf8");
        const section = /\[remote "origin"\]([^[]*)/.exec(config);
        const url = section && /^\s*url\s*=\s*(.+)$/m.exec(section[1]);
        return url ? repoFromRemote(url[1]) : null;
      }
      const up = path.dirname(dir);
      if (up === dir) return null;
      dir = up;
    }
  } catch { /* best effort */ }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Link: one session's connection, seq counter and buffer

class Link {
  sessionId;
  info;
  /** The factory run currently attached: receives prompts and aborts. */
  binding = null;
  #cfg;
  #log;
  #seqFile;
  #buf = [];
  #head = 0;
  #sendAt = 0;
  #chars = 0;
  #nextSeq;
  #baseSeq;
  #everWelcomed = false;
  #overflow = null;
  #ws = null;
  #state = "down";
  #attempt = 0;
  #replaced = 0;
  #timer = null;
  #welcomeTimer = null;
  #flushQueued = false;
  #seqTimer = null;
  #seqWritten = 0;
  #closing = null;
  #lastError = "";

  constructor(cfg, sessionId, info, log) {
    this.#cfg = cfg;
    this.#log = log;
    this.sessionId = sessionId;
    this.info = info;
    this.#seqFile = path.join(cfg.stateDir, "seq", sessionId);
    let last = 0;
    try {
      last = Number.parseInt(fs.readFileSync(this.#seqFile, "utf8"), 10) || 0;
    } catch { /* a new session */ }
    this.#seqWritten = last;
    this.#nextSeq = this.#baseSeq = last + 1;
  }

  get nextSeq() {
    return this.#nextSeq;
  }

  get closed() {
    return this.#state === "closed";
  }

  /**
   * Queue one event; returns its seq. Never does I/O itself.
   * @param size roughly how many characters the payload holds (for the buffer's memory bound)
   */
  emit(type, payload, size = 200) {
    const seq = this.#nextSeq++;
    this.#seqDirty();
    // Deltas are only useful live: the daemon never stores them, so offline ones are not kept.
    if (type === "message_update" && this.#state !== "ready") return seq;
    const ev = { v: PROTOCOL_VERSION, sessionId: this.sessionId, seq, ts: Date.now(), type, ...payload };
    ev[SIZE] = size;
    this.#buf.push(ev);
    this.#chars += size;
    // The overflow notice itself may exceed the caps: dropping for it would start a new overflow.
    while (
      type !== "buffer_overflow" && this.#head < this.#buf.length - 1 &&
      (this.#buf.length - this.#head > MAX_BUFFER || this.#chars > MAX_BUFFER_CHARS)
    ) this.#dropOldest();
    if (this.#state === "ready") this.#queueFlush();
    return seq;
  }

  /** Start connecting (idempotent). */
  start() {
    if (this.#state === "down" && !this.#timer && !this.#closing) {
      this.#connect();
    }
  }

  /** Send `bye`, wait (bounded) for the daemon to take everything, then close for good. */
  close() {
    if (this.#closing) return this.#closing;
    this.emit("bye", { reason: "shutdown" });
    const byeSeq = this.#nextSeq - 1;
    this.#writeSeqSync();
    if (this.#ws === null) {
      // No socket: nothing can be delivered, so do not hold pi's exit at all.
      this.#shutdown();
      this.#closing = Promise.resolve();
      return this.#closing;
    }
    // These timers stay referenced: pi awaits this promise, and an unreferenced wait could let Node exit
    // in the middle of pi's own shutdown. SHUTDOWN_WAIT_MS bounds them.
    this.#closing = new Promise((resolve) => {
      const finish = () => {
        clearInterval(poll);
        clearTimeout(deadline);
        this.#shutdown();
        resolve();
      };
      const poll = setInterval(() => {
        const head = this.#buf[this.#head];
        if (!head || head.seq > byeSeq) finish();
      }, POLL_MS);
      const deadline = setTimeout(finish, SHUTDOWN_WAIT_MS);
    });
    return this.#closing;
  }

  /** Frames from the daemon. */
  onFrame(text) {
    let f;
    try {
      f = JSON.parse(typeof text === "string" ? text : String(text));
    } catch {
      return this.#log("daemon sent a frame that is not JSON");
    }
    if (f?.type === "welcome") this.#onWelcome(Number(f.lastSeq) || 0);
    else if (f?.type === "ack") this.#trim(Number(f.lastSeq) || 0);
    else if (f?.type === "prompt" && typeof f.message === "string") {
      const deliverAs = f.deliverAs === "followUp" ? "followUp" : "steer";
      if (this.binding) {
        this.binding.deliver({ promptId: f.promptId, message: f.message, deliverAs });
      } else this.#log(`prompt ${f.promptId} dropped: no live pi session`);
    } else if (f?.type === "abort") this.binding?.abort();
    else if (f?.type === "error") {
      this.#log(`daemon error ${f.code}: ${f.message}`);
    }
  }

  #connect() {
    this.#timer = null;
    if (this.#closing || this.#state === "closed") return;
    this.#state = "connecting";
    webSocketClass().then((WebSocket) => {
      if (this.#closing) return this.#down(1000);
      const headers = { authorization: `Bearer ${this.#cfg.token}` };
      const ws = new WebSocket(this.#cfg.url, { headers });
      this.#ws = ws;
      ws.onopen = () => {
        if (this.#ws !== ws) return;
        this.#state = "open";
        ws.send(JSON.stringify({
          v: PROTOCOL_VERSION,
          type: "hello",
          sessionId: this.sessionId,
          seq: 0,
          ts: Date.now(),
          session: this.info,
        }));
        this.#welcomeTimer = unref(setTimeout(() => ws.close(1000), WELCOME_TIMEOUT_MS));
      };
      ws.onmessage = (e) => this.#ws === ws && this.onFrame(e.data);
      ws.onerror = (e) =>
        this.#noteError(`socket error: ${e?.message ?? e?.error?.message ?? "connection failed"}`);
      ws.onclose = (e) => {
        if (this.#ws !== ws) return;
        this.#ws = null;
        this.#down(e?.code ?? 1006);
      };
    }).catch((err) => {
      this.#noteError(`cannot open socket: ${err?.message ?? err}`);
      this.#down(1006);
    });
  }

  #down(code) {
    clearTimeout(this.#welcomeTimer);
    if (this.#state === "closed") return;
    this.#state = "down";
    if (this.#closing) return;
    let delay;
    if (code === 4000) {
      // Another process holds this session (e.g. a second `pi -c`). Come back, but ever more slowly, and the
      // count survives welcomes, so two such processes settle on taking turns every 30 s, not every 5 s.
      this.#log(`session ${this.sessionId}: replaced by a newer connection`);
      delay = Math.min(BACKOFF_MAX_MS, REPLACED_MIN_MS * 2 ** Math.min(this.#replaced++, 16));
    } else {
      delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** Math.min(this.#attempt++, 16));
    }
    this.#timer = unref(setTimeout(() => this.#connect(), delay * (0.5 + Math.random() * 0.5)));
  }

  #noteError(msg) {
    // A daemon that stays down would otherwise fill the log with one line per retry.
    if (msg !== this.#lastError) this.#log(`session ${this.sessionId}: ${msg}`);
    this.#lastError = msg;
  }

  #onWelcome(lastSeq) {
    clearTimeout(this.#welcomeTimer);
    if (!this.#everWelcomed && lastSeq >= this.#baseSeq) {
      // The daemon holds seqs this process thought were free (the seq file lagged behind a crash).
      // Nothing was sent yet in this process, so renumber everything above the daemon's last one.
      const shift = lastSeq + 1 - this.#baseSeq;
      for (let i = this.#head; i < this.#buf.length; i++) {
        this.#buf[i].seq += shift;
      }
      if (this.#overflow) {
        this.#overflow.firstDroppedSeq += shift;
        this.#overflow.lastDroppedSeq += shift;
      }
      this.#nextSeq += shift;
      this.#baseSeq += shift;
      this.#seqDirty();
      this.#log(`session ${this.sessionId}: renumbered local events after daemon seq ${lastSeq}`);
    } else if (lastSeq >= this.#nextSeq) {
      this.#nextSeq = lastSeq + 1;
      this.#seqDirty();
    }
    this.#everWelcomed = true;
    this.#attempt = 0;
    this.#lastError = "";
    this.#trim(lastSeq);
    this.#buf = this.#buf.slice(this.#head).filter((e) => e.type !== "message_update");
    this.#chars = this.#buf.reduce((n, e) => n + e[SIZE], 0);
    this.#head = 0;
    this.#sendAt = 0;
    this.#state = "ready";
    if (this.#overflow) {
      const o = this.#overflow;
      this.#overflow = null;
      this.#log(`session ${this.sessionId}: buffer overflow, ${o.dropped} events dropped`);
      this.emit("buffer_overflow", o);
    }
    this.#queueFlush();
  }

  #trim(lastSeq) {
    while (this.#head < this.#buf.length && this.#buf[this.#head].seq <= lastSeq) this.#advance();
    this.#compact();
  }

  /** Forget the oldest buffered event. */
  #advance() {
    this.#chars -= this.#buf[this.#head][SIZE];
    this.#buf[this.#head++] = undefined;
    if (this.#sendAt < this.#head) this.#sendAt = this.#head;
  }

  #compact() {
    if (this.#head > 4096 && this.#head * 2 > this.#buf.length) {
      this.#buf = this.#buf.slice(this.#head);
      this.#sendAt -= this.#head;
      this.#head = 0;
    }
  }

  #dropOldest() {
    const ev = this.#buf[this.#head];
    // Events already written to a live socket most likely reached the daemon; only unsent ones are lost.
    if (this.#head >= this.#sendAt && ev.type !== "message_update") {
      this.#overflow ??= { dropped: 0, firstDroppedSeq: ev.seq, lastDroppedSeq: ev.seq };
      this.#overflow.dropped++;
      this.#overflow.lastDroppedSeq = ev.seq;
    }
    this.#advance();
    this.#compact();
  }

  #queueFlush() {
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    later(() => this.#flush());
  }

  #flush() {
    this.#flushQueued = false;
    const ws = this.#ws;
    if (this.#state !== "ready" || !ws) return;
    try {
      for (let n = 0; this.#sendAt < this.#buf.length; n++) {
        if (n >= SEND_BATCH) return this.#queueFlush();
        if (ws.bufferedAmount > HIGH_WATER_BYTES) {
          unref(setTimeout(() => this.#queueFlush(), 20));
          return;
        }
        ws.send(encode(this.#buf[this.#sendAt]));
        this.#sendAt++;
      }
    } catch (err) {
      this.#log(`session ${this.sessionId}: send failed`, err);
      try {
        ws.close(1011);
      } catch { /* already closing */ }
    }
  }

  #seqDirty() {
    this.#seqTimer ??= unref(setTimeout(() => this.#writeSeq(), SEQ_WRITE_MS));
  }

  #writeSeq() {
    this.#seqTimer = null;
    const last = this.#nextSeq - 1;
    if (last === this.#seqWritten) return;
    this.#seqWritten = last;
    const tmp = `${this.#seqFile}.${process.pid}.tmp`;
    fs.promises.mkdir(path.dirname(this.#seqFile), { recursive: true })
      .then(() => fs.promises.writeFile(tmp, String(last)))
      .then(() => fs.promises.rename(tmp, this.#seqFile))
      .catch((err) => this.#noteError(`cannot save seq: ${err?.message ?? err}`));
  }

  #writeSeqSync() {
    clearTimeout(this.#seqTimer);
    this.#seqTimer = null;
    try {
      fs.mkdirSync(path.dirname(this.#seqFile), { recursive: true });
      fs.writeFileSync(this.#seqFile, String(this.#nextSeq - 1));
      this.#seqWritten = this.#nextSeq - 1;
    } catch (err) {
      this.#log(`cannot save seq for ${this.sessionId}`, err);
    }
  }

  #shutdown() {
    this.#state = "closed";
    clearTimeout(this.#timer);
    clearTimeout(this.#welcomeTimer);
    this.#writeSeqSync();
    const ws = this.#ws;
    this.#ws = null;
    try {
      ws?.close(1000, "bye");
    } catch { /* ignore */ }
    this.#buf = [];
    this.#head = this.#sendAt = this.#chars = 0;
  }
}

/** JSON for one event, its strings shrunk (never the JSON itself) when it would exceed the frame limit. */
function encode(ev) {
  let s = JSON.stringify(ev);
  for (const n of [20_000, 200]) {
    if (s.length <= MAX_FRAME_CHARS) break;
    s = JSON.stringify(ev, (_k, v) => (typeof v === "string" ? clip(v, n) : v));
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Binding: one factory run's handlers

/** Settings from the factory's options, else the environment. */
function readConfig(options) {
  const env = options.env ?? process.env;
  const home = options.home ?? os.homedir();
  return {
    url: options.url ?? env.LVMH_URL ?? "",
    token: options.token ?? env.LVMH_TOKEN ?? "",
    agent: options.agent ?? env.LVMH_AGENT === "1",
    repo: options.repo ?? (env.LVMH_REPO || null),
    stateDir: options.stateDir ?? (env.LVMH_STATE_DIR || path.join(home, ".pi", "lvmh-agent")),
    logFile: options.logFile ?? path.join(home, ".pi", "lvmh-agent.log"),
  };
}

/** A string field cut to the daemon's bound (a hello it rejects would be retried forever), or null. */
function field(value, max) {
  return value === undefined || value === null ? null : String(value).slice(0, max);
}

/** The `hello` session snapshot, from pi's ctx. */
function snapshot(ctx, cfg) {
  const sm = ctx.sessionManager;
  const cwd = ctx.cwd ?? sm.getCwd?.() ?? "";
  const started = Date.parse(sm.getHeader?.()?.timestamp ?? "");
  return {
    id: sm.getSessionId(),
    name: field(sm.getSessionName?.(), 1000),
    cwd: field(cwd, 4096),
    model: field(ctx.model?.id, 200),
    provider: field(ctx.model?.provider, 200),
    agent: cfg.agent,
    repo: field(cfg.repo ?? repoFromGit(cwd), 500),
    startedAt: Number.isFinite(started) ? started : Date.now(),
  };
}

/**
 * Register this factory run's handlers on `pi`. State that must outlive the run (the session's link, its
 * seq and buffer) lives in the global link registry; the rest belongs to this run.
 */
function bind(pi, cfg, log) {
  const g = globalState();
  let link = null;
  let ctxRef = null;
  let running = false;
  let settlePending = false;
  let awaitingStart = 0;
  let pollTimer = null;
  let renameTimer = null;
  const prompts = [];
  const ids = new Map();
  const toolUpdates = new Map();

  const guard = (name, fn) => (event, ctx) => {
    try {
      if (ctx) ctxRef = ctx;
      return fn(event ?? {}, ctx);
    } catch (err) {
      log(`handler ${name} failed`, err);
    }
  };
  const on = (name, fn) => pi.on(name, guard(name, fn));

  function checkInfo(ctx, model) {
    if (!link || !ctx) return;
    const name = field(ctx.sessionManager?.getSessionName?.(), 1000);
    const m = model ?? ctx.model;
    const info = link.info;
    const id = field(m?.id, 200), provider = field(m?.provider, 200);
    if (name === info.name && id === info.model && provider === info.provider) return;
    link.info = { ...info, name, model: id, provider };
    link.emit("session_info", { session: link.info });
  }

  // Prompt delivery and the settle check share one poll, armed only while something waits for pi to idle.
  function pump() {
    while (prompts.length && link && ctxRef) {
      const p = prompts[0];
      // Between agent_end and idle a queued message can get stuck (pi 0.73.1), so wait for real idle;
      // after an idle send, wait for its agent_start so a second prompt cannot race it.
      if (!running && (awaitingStart > Date.now() || !ctxRef.isIdle())) return arm();
      prompts.shift(); // first: a prompt pi refuses must not block the ones behind it
      try {
        if (running) pi.sendUserMessage(p.message, { deliverAs: p.deliverAs });
        else {
          awaitingStart = Date.now() + START_WAIT_MS;
          pi.sendUserMessage(p.message);
        }
      } catch (err) {
        log(`prompt ${p.promptId} refused by pi`, err);
      }
    }
    // pi 0.73.1 has no agent_settled event: idle after agent_end, with no prompt of ours about to start, is it.
    if (settlePending && !nativeSettle && !running && !prompts.length && awaitingStart <= Date.now()) {
      if (ctxRef?.isIdle()) {
        settlePending = false;
        link?.emit("agent_settled", {});
      } else arm();
    }
  }
  function arm() {
    pollTimer ??= unref(setTimeout(() => {
      pollTimer = null;
      try {
        pump();
      } catch (err) {
        log("prompt delivery failed", err);
      }
    }, POLL_MS));
  }

  const binding = {
    deliver(p) {
      prompts.push(p);
      try {
        pump();
      } catch (err) {
        log(`prompt ${p.promptId} failed`, err);
      }
    },
    abort() {
      try {
        ctxRef?.abort();
      } catch (err) {
        log("abort failed", err);
      }
    },
  };

  const nativeSettle = typeof pi.on(
    "agent_settled",
    guard("agent_settled", () => {
      if (!settlePending) return;
      settlePending = false;
      link?.emit("agent_settled", {});
    }),
  ) === "function";

  on("session_start", (_e, ctx) => {
    const info = snapshot(ctx, cfg);
    if (link?.sessionId === info.id) return checkInfo(ctx);
    link = g.links.get(info.id);
    if (!link || link.closed) {
      link = new Link(cfg, info.id, info, log);
      g.links.set(info.id, link);
    } else {
      link.info = info;
    }
    link.binding = binding;
    link.start();
    // pi 0.73.1 tells extensions nothing about a /name typed while idle; 1.6.0 has session_info_changed.
    if (!nativeSettle && !renameTimer) {
      renameTimer = unref(setInterval(() => {
        try {
          if (!running) checkInfo(ctxRef);
        } catch { /* a stale ctx after a session switch */ }
      }, RENAME_POLL_MS));
    }
    pump();
  });
  on("session_shutdown", (e) => {
    const current = link;
    link = null;
    clearTimeout(pollTimer);
    clearInterval(renameTimer);
    pollTimer = renameTimer = null;
    if (!current) return;
    if (current.binding === binding) current.binding = null;
    if (settlePending && !running) current.emit("agent_settled", {}); // pi is idle by now: print mode ends here
    settlePending = false;
    if (e.reason === "reload") return; // the same session comes back in the next factory run
    g.links.delete(current.sessionId);
    const done = current.close();
    log.flushSync();
    return done;
  });
  on("agent_start", (_e, ctx) => {
    // pi 0.73.1 starts a run only from idle, so a settle still pending here was missed by the idle poll (a
    // prompt came within one poll): report it first, so each run settles as it does natively on 1.6.0.
    if (settlePending && !nativeSettle) link?.emit("agent_settled", {});
    running = true;
    settlePending = false;
    awaitingStart = 0;
    link?.emit("agent_start", {});
    checkInfo(ctx);
    pump();
  });
  on("agent_end", (e, ctx) => {
    running = false;
    const usage = { inputTokens: 0, outputTokens: 0, totalCost: 0 };
    for (const m of Array.isArray(e.messages) ? e.messages : []) {
      if (m?.role !== "assistant" || !m.usage) continue;
      usage.inputTokens += Number(m.usage.input) || 0;
      usage.outputTokens += Number(m.usage.output) || 0;
      usage.totalCost += Number(m.usage.cost?.total) || 0;
    }
    link?.emit("agent_end", { usage });
    settlePending = true;
    checkInfo(ctx);
    if (!nativeSettle || prompts.length) arm();
  });
  on("message_start", (e) => {
    if (!link) return;
    const m = e.message ?? {};
    const id = `${m.role}-${m.timestamp ?? 0}-${link.nextSeq}`;
    ids.set(`${m.role}:${m.timestamp}`, id);
    link.emit("message_start", { message: { role: mapRole(m.role), id } });
  });
  on("message_update", (e) => {
    const a = e.assistantMessageEvent;
    if (!link || !a) return;
    if (a.type === "text_delta") {
      link.emit("message_update", { delta: a.delta ?? "", kind: "text" });
    } else if (a.type === "thinking_delta") {
      link.emit("message_update", { delta: a.delta ?? "", kind: "thinking" });
    }
  });
  on("message_end", (e) => {
    if (!link) return;
    const m = e.message ?? {};
    const key = `${m.role}:${m.timestamp}`;
    const id = ids.get(key) ?? `${m.role}-${m.timestamp ?? 0}-${link.nextSeq}`;
    ids.delete(key);
    const message = toMessage(m, id);
    let size = 300 + message.text.length + (message.thinking?.length ?? 0);
    for (const c of message.toolCalls) size += c.argsJson.length;
    link.emit("message_end", { message }, size);
  });
  on("tool_execution_start", (e) => {
    const { args, size } = safeArgs(e.args);
    link?.emit("tool_execution_start", {
      toolCallId: String(e.toolCallId ?? ""),
      toolName: String(e.toolName ?? ""),
      args,
    }, 300 + size);
  });
  on("tool_execution_update", (e) => {
    if (!link) return;
    // Output arrives accumulated and can come in bursts: send its tail, at most once per TOOL_UPDATE_MS.
    const id = String(e.toolCallId ?? "");
    const frame = { toolCallId: id, toolName: String(e.toolName ?? ""), result: e.partialResult };
    let u = toolUpdates.get(id);
    if (!u) toolUpdates.set(id, u = { last: 0, pending: null, timer: null });
    const send = (f) => {
      u.last = Date.now();
      u.pending = null;
      link?.emit("tool_execution_update", {
        toolCallId: f.toolCallId,
        toolName: f.toolName,
        partial: resultText(f.result, PREVIEW_CHARS, true),
      }, 300 + PREVIEW_CHARS);
    };
    if (Date.now() - u.last >= TOOL_UPDATE_MS) return send(frame);
    u.pending = frame;
    u.timer ??= unref(setTimeout(() => {
      u.timer = null;
      if (u.pending) send(u.pending);
    }, TOOL_UPDATE_MS));
  });
  on("tool_execution_end", (e) => {
    if (!link) return;
    const id = String(e.toolCallId ?? "");
    const u = toolUpdates.get(id);
    toolUpdates.delete(id);
    if (u) clearTimeout(u.timer);
    link.emit("tool_execution_end", {
      toolCallId: id,
      toolName: String(e.toolName ?? ""),
      isError: !!e.isError,
      resultPreview: resultText(e.result, PREVIEW_CHARS),
    }, 300 + PREVIEW_CHARS);
  });
  on("model_select", (e, ctx) => checkInfo(ctx, e.model));
  const infoEvents = [
    "input",
    "turn_end",
    "session_info_changed",
    "thinking_level_select",
    "session_compact",
  ];
  for (const name of infoEvents) on(name, (_e, ctx) => checkInfo(ctx));
}

/** Once per process, in the background: rotate a large log, forget seq files of long-gone sessions. */
function housekeeping(cfg) {
  const g = globalState();
  if (g.housekept) return;
  g.housekept = true;
  const p = fs.promises;
  p.stat(cfg.logFile)
    .then((st) => st.size > LOG_MAX_BYTES && p.rename(cfg.logFile, `${cfg.logFile}.1`))
    .catch(() => {});
  const dir = path.join(cfg.stateDir, "seq");
  const cutoff = Date.now() - SEQ_KEEP_MS;
  p.readdir(dir).then((names) =>
    Promise.all(names.map(async (name) => {
      const file = path.join(dir, name);
      if ((await p.stat(file)).mtimeMs < cutoff) await p.unlink(file);
    }))
  ).catch(() => {});
}

/**
 * Build the pi extension factory.
 * @param options overrides for tests and benchmarks: url, token, agent, repo, stateDir, logFile, home, env.
 * @returns the factory; it never throws, and registers nothing when the URL or token is missing.
 */
export function createLvmhAgent(options = {}) {
  return function lvmhAgent(pi) {
    let cfg;
    try {
      cfg = readConfig(options);
      if (
        !cfg.url || !cfg.token || options.env?.LVMH_DISABLED === "1" ||
        process.env.LVMH_DISABLED === "1"
      ) return;
    } catch {
      return;
    }
    const log = makeLogger(cfg.logFile, cfg.token);
    try {
      housekeeping(cfg);
      bind(pi, cfg, log);
    } catch (err) {
      log("lvmh-agent failed to start", err);
    }
  };
}

/** pi loads this: the factory configured from the environment. */
export default createLvmhAgent();
