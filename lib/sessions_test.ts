import assert from "node:assert/strict";
import { Store } from "./store.ts";
import { Hub, type Subscriber } from "./hub.ts";
import { Ingest } from "./ingest.ts";
import { type PluginLink, Sessions } from "./sessions.ts";
import { Approvals } from "./approvals.ts";
import { SqliteApprovalLog } from "./storage/sqlite_approval_log.ts";
import { ImageStore } from "./image_store.ts";
import { SqliteImageLog } from "./storage/sqlite_image_log.ts";
import { Workspaces } from "./workspaces.ts";
import type { AgentEvent, DaemonFrame, ServerFrame, SessionInfo, SessionSummary } from "./protocol.ts";
import { ConflictError, InvalidError, NotFoundError } from "./errors.ts";
import { deleteSession, pruneSessions } from "./session_removal.ts";
import { sessionInfo } from "../testing/agent.ts";

const DAY = 24 * 60 * 60 * 1000;
const NOW = Date.UTC(2026, 10, 30);
const info = (id: string, startedAt = NOW) => sessionInfo(id, { startedAt }) as SessionInfo;
const ev = (sessionId: string, seq: number, ts: number, type = "agent_start") =>
  ({ v: 1, sessionId, seq, ts, type }) as AgentEvent;

function recorder() {
  const frames: DaemonFrame[] = [];
  const closed: number[] = [];
  const link: PluginLink = { send: (f) => frames.push(f), close: (code) => closed.push(code) };
  return { link, frames, closed };
}

/** A registry over a real SQLite file, with a browser recorder on the hub. */
async function withRegistry(fn: (r: Awaited<ReturnType<typeof build>>) => void | Promise<void>) {
  const r = await build();
  try {
    await fn(r);
  } finally {
    r.sessions.closeAll(1001, "test over");
    r.store.close();
    await Deno.remove(r.dir, { recursive: true });
  }
}

async function build() {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-sessions-" });
  const store = new Store(`${dir}/lvmh.db`);
  const hub = new Hub();
  const seen: ServerFrame[] = [];
  const browser: Subscriber = { send: (d) => seen.push(JSON.parse(d)), bufferedAmount: () => 0, close() {} };
  hub.join(browser);
  const ingest = new Ingest(store, hub, (commits) => commits.forEach((c) => sessions.touch(c.sessionId)));
  const images = new ImageStore(store.db);
  const sessions = new Sessions(store, ingest, hub, { defaultAsk: ["bash"], images });
  const approvals = new Approvals(new SqliteApprovalLog(store.db), {
    trySend: (id, c) => sessions.trySend(id, c),
    touch: (id) => sessions.touch(id),
    broadcast: (f) => hub.broadcast(f),
  });
  sessions.setWaiting((id) => approvals.waiting(id));
  /** Wait until the throttled updates name `ids` (changed or removed), then merge and return them. */
  const updates = async (...ids: string[]) => {
    const deadline = Date.now() + 2000;
    const merged = { sessions: new Map<string, SessionSummary>(), removed: new Set<string>() };
    for (;;) {
      for (const f of seen.splice(0)) {
        if (f.type !== "session_update") continue;
        for (const s of f.sessions) merged.sessions.set(s.id, s);
        for (const id of f.removed) merged.removed.add(id);
      }
      const named = (id: string) => merged.sessions.has(id) || merged.removed.has(id);
      if (ids.every(named) && (ids.length || merged.sessions.size || merged.removed.size)) break;
      if (Date.now() > deadline) throw new Error(`no session_update naming ${ids.join(", ")}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    return { sessions: [...merged.sessions.values()], removed: [...merged.removed] };
  };
  const workspaces = new Workspaces(store.db);
  // The app's images are the async log over the same table the registry's store keeps them in.
  const log = new SqliteImageLog(store.db);
  return {
    dir,
    store,
    hub,
    ingest,
    sessions,
    approvals,
    images: log,
    imageStore: images,
    workspaces,
    seen,
    updates,
  };
}

Deno.test("sessions: connect, replace and disconnect own the online flag and announce only changed rows", () =>
  withRegistry(async ({ sessions, updates }) => {
    const first = recorder();
    sessions.register(info("spawned"), ["edit"]);
    assert.deepEqual(sessions.connect(info("a"), first.link), { lastSeq: 0, ask: ["bash"] });
    assert.equal(sessions.get("a")!.online, true);
    const update = await updates("a", "spawned");
    assert.deepEqual(update.sessions.map((s) => [s.id, s.online, s.ask]).sort(), [
      ["a", true, ["bash"]],
      ["spawned", false, ["edit"]],
    ]);

    const second = recorder();
    sessions.connect(info("a"), second.link);
    assert.deepEqual(first.closed, [4000], "the older socket is replaced");
    assert.equal(sessions.disconnect("a", first.link), false, "a replaced socket does not take it offline");
    assert.equal(sessions.isOnline("a"), true);
    assert.equal(sessions.disconnect("a", second.link), true);
    assert.equal(sessions.get("a")!.online, false);
  }));

Deno.test("sessions: register keeps the snapshot of a session that already said hello", () =>
  withRegistry(({ sessions }) => {
    sessions.connect({ ...info("s"), name: "from hello" }, recorder().link);
    sessions.register({ ...info("s"), name: null }, ["bash", "edit"]);
    assert.equal(sessions.get("s")!.name, "from hello");
    assert.deepEqual(sessions.get("s")!.ask, ["bash", "edit"]);
  }));

Deno.test("sessions: send routes to the live link; unknown is 404, offline is 409", () =>
  withRegistry(({ sessions }) => {
    const r = recorder();
    sessions.connect(info("a"), r.link);
    sessions.send("a", { type: "abort", commandId: "c1" });
    assert.equal(r.frames[0].type, "abort");
    assert.equal(r.frames[0].sessionId, "a");
    assert.throws(() => sessions.send("ghost", { type: "abort" }), NotFoundError);
    sessions.disconnect("a", r.link);
    assert.throws(() => sessions.send("a", { type: "abort" }), ConflictError);
  }));

Deno.test("sessions: prompt checks and keeps images only for a live session, then sends the frame with `by`", () =>
  withRegistry(({ sessions, imageStore: images, store }) => {
    const png =
      "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    const image = { mimeType: "image/png", data: png };
    const stored = () =>
      (store.db.prepare("SELECT count(*) AS n FROM session_images").get() as { n: number }).n;
    sessions.register(info("off"));
    assert.throws(
      () => sessions.prompt("ghost", { message: "hi", deliverAs: "steer", by: "x" }),
      NotFoundError,
    );
    assert.throws(
      () => sessions.prompt("off", { message: "hi", deliverAs: "steer", images: [image], by: "x" }),
      ConflictError,
    );
    assert.equal(stored(), 0, "a refused prompt leaves no image behind");
    const bad = { mimeType: "image/png", data: btoa("GIF89a......") };
    assert.throws(
      () => sessions.prompt("off", { message: "hi", deliverAs: "steer", images: [bad], by: "x" }),
      InvalidError,
      "images are checked before the session is",
    );

    const r = recorder();
    sessions.connect(info("a"), r.link);
    const sent = sessions.prompt("a", {
      message: "look",
      deliverAs: "followUp",
      images: [image],
      by: "alice",
    });
    assert.deepEqual(Object.keys(sent), ["promptId", "message", "deliverAs", "images"]);
    assert.equal(sent.images?.[0].mimeType, "image/png");
    assert.ok(images.get("a", sent.images![0].sha256), "kept before the frame left");
    const frame = r.frames[0];
    assert.equal(frame.type, "prompt");
    if (frame.type !== "prompt") return;
    assert.deepEqual(
      { ...frame, ts: 0 },
      {
        v: 1,
        sessionId: "a",
        seq: 0,
        ts: 0,
        type: "prompt",
        promptId: sent.promptId,
        commandId: sent.promptId,
        message: "look",
        deliverAs: "followUp",
        by: "alice",
        images: [image],
      },
    );

    const kept = sessions.prompt("a", {
      message: "again",
      deliverAs: "steer",
      by: "hook:ci",
      promptId: "p-1",
    });
    assert.deepEqual(kept, { promptId: "p-1", message: "again", deliverAs: "steer" });
    assert.equal(r.frames[1].type === "prompt" && r.frames[1].by, "hook:ci");
  }));

Deno.test("sessions: setPolicy persists and reaches an online plugin at once", () =>
  withRegistry(({ sessions }) => {
    const r = recorder();
    sessions.connect(info("a"), r.link);
    assert.deepEqual(sessions.setPolicy("a", "all"), "all");
    assert.deepEqual(r.frames.map((f) => f.type), ["policy"]);
    assert.equal((r.frames[0] as { ask: unknown }).ask, "all");
    assert.equal(sessions.askOf("a"), "all");
    assert.throws(() => sessions.setPolicy("ghost", []), NotFoundError);
  }));

Deno.test("sessions: connect answers the committed seq, events queued from an older socket included", () =>
  withRegistry(({ sessions, ingest }) => {
    const r = recorder();
    sessions.connect(info("a"), r.link);
    ingest.push(ev("a", 1, NOW), { ack() {}, fail() {} });
    ingest.push(ev("a", 2, NOW), { ack() {}, fail() {} });
    assert.equal(sessions.connect(info("a"), recorder().link).lastSeq, 2);
  }));

Deno.test("pruneSessions() deletes offline sessions idle past the period, by last event or start", () =>
  withRegistry(async (r) => {
    const { store, sessions } = r;
    for (const [id, at] of [["old", 40], ["recent", 40], ["never-ran", 31], ["new", 1], ["old-online", 40]]) {
      sessions.register(info(id as string, NOW - (at as number) * DAY));
    }
    sessions.connect(info("old-online", NOW - 40 * DAY), recorder().link);
    store.appendBatch([
      ev("old", 1, NOW - 35 * DAY),
      ev("recent", 1, NOW - 2 * DAY),
      ev("old-online", 1, NOW - 35 * DAY),
    ]);
    await r.updates("old", "recent", "never-ran", "new", "old-online");

    assert.deepEqual(pruneSessions(r, 30, NOW).sort(), ["never-ran", "old"]);
    assert.deepEqual(sessions.list().map((s) => s.id).sort(), ["new", "old-online", "recent"]);
    assert.deepEqual(store.events("old", { after: 0, limit: 10 }), []);
    const update = await r.updates("never-ran", "old");
    assert.deepEqual(update.removed.sort(), ["never-ran", "old"], "browsers told of each removal");
    assert.deepEqual(pruneSessions(r, 30, NOW), [], "nothing left to prune");
  }));

Deno.test("deleteSession() refuses an online session (409) and an unknown one (404)", () =>
  withRegistry((r) => {
    const link = recorder().link;
    r.sessions.connect(info("live"), link);
    assert.throws(() => deleteSession(r, "live"), ConflictError);
    assert.throws(() => deleteSession(r, "ghost"), NotFoundError);
    r.sessions.disconnect("live", link);
    const start = { repo: "g/p", baseBranch: "main", baseSha: "a".repeat(40), branch: "lvmh/live0000" };
    r.workspaces.record("live", start);
    deleteSession(r, "live");
    assert.equal(r.sessions.get("live"), null);
    assert.equal(r.workspaces.get("live"), undefined, "its working copy record goes with it");
  }));

Deno.test("sessions: lists leave out the models a session may switch to; the session itself has them", () =>
  withRegistry(async ({ sessions, updates }) => {
    const models = [{
      provider: "p",
      id: "m1",
      name: "M1",
      hasAuth: true,
      reasoning: false,
      input: ["text"],
    }];
    sessions.connect({ ...info("a"), models } as SessionInfo, recorder().link);
    assert.deepEqual(sessions.get("a")!.models, models);
    assert.equal(sessions.list()[0].models, undefined);
    assert.equal(sessions.list()[0].id, "a");
    const update = await updates("a");
    assert.equal(update.sessions[0].models, undefined, "session_update rows are list rows");
  }));
