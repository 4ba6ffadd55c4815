/**
 * The plugin cuts what it sends to exactly the bounds the daemon's schema checks (lib/wire.ts `FieldMax`):
 * a value cut by the plugin passes `lib/protocol.ts`, the same value one longer does not, and no plugin file
 * cuts to a number of its own that `FieldMax` defines.
 */
import assert from "node:assert/strict";
import {
  AgentEvent,
  ApprovalRequestEvent,
  ApprovalResolvedEvent,
  CommandResultEvent,
  FieldMax,
  HelloFrame,
  MessageEndEvent,
  MessageStartEvent,
  NameBody,
} from "../lib/protocol.ts";
import { Approvals } from "../plugin/src/approvals.ts";
import { DaemonCommands } from "../plugin/src/daemon_commands.ts";
import { Link } from "../plugin/src/link.ts";
import { messageId, toMessage } from "../plugin/src/mapping.ts";
import { fromOf, Origins } from "../plugin/src/origins.ts";
import type { PiContext } from "../plugin/src/pi_types.ts";
import { snapshot } from "../plugin/src/snapshot.ts";
import { setName } from "../plugin/src/steer.ts";
import type { Config } from "../plugin/src/config.ts";
import type { z } from "zod";

const envelope = (type: string, seq = 1) => ({ v: 1, type, sessionId: "s-1", seq, ts: 1 });
const quiet = Object.assign(() => {}, { flushSync: () => {} });
const long = (n = 20_000) => "x".repeat(n);

type Path = (string | number)[];
// deno-lint-ignore no-explicit-any
const get = (o: unknown, path: Path) => path.reduce((v: any, k) => v?.[k], o);
function set(o: unknown, path: Path, value: unknown) {
  const parent = get(o, path.slice(0, -1)) as Record<string | number, unknown>;
  parent[path[path.length - 1]] = value;
}

/**
 * `frame` (built by the plugin's own code) passes `schema`; the string or list at each path is as long as
 * its bound, and one character (or item) more makes the schema refuse the frame.
 */
function atBounds(schema: z.ZodType, frame: unknown, fields: [Path, number][]) {
  const r = schema.safeParse(frame);
  assert.ok(
    r.success,
    `the plugin's frame passes the daemon's schema: ${JSON.stringify(r.error?.issues[0])}`,
  );
  for (const [path, bound] of fields) {
    const v = get(frame, path) as string | unknown[];
    assert.equal(v.length, bound, `${path.join(".")} is cut at ${bound}`);
    const over = structuredClone(frame);
    set(over, path, typeof v === "string" ? v + "x" : [...v, v[0]]);
    assert.ok(!schema.safeParse(over).success, `${path.join(".")} one over ${bound} is refused`);
  }
}

Deno.test("the hello snapshot the plugin builds from overlong pi data is cut at the daemon's bounds", () => {
  const model = { provider: long(), id: long(), name: long(), input: Array(30).fill(long(50)) };
  const ctx = {
    cwd: long(),
    model,
    sessionManager: {
      getSessionId: () => "s-1",
      getSessionName: () => long(),
      getHeader: () => ({ timestamp: new Date(0).toISOString() }),
    },
    modelRegistry: { getAvailable: () => [model], hasConfiguredAuth: () => true },
  } as unknown as PiContext;
  const session = snapshot(ctx, { agent: false, repo: long() } as Config, { thinkingLevel: long() });
  atBounds(HelloFrame, { ...envelope("hello", 0), session }, [
    [["session", "name"], FieldMax.sessionName],
    [["session", "cwd"], FieldMax.cwd],
    [["session", "model"], FieldMax.model],
    [["session", "provider"], FieldMax.model],
    [["session", "repo"], FieldMax.repo],
    [["session", "thinkingLevel"], FieldMax.thinkingLevel],
    [["session", "models", 0, "provider"], FieldMax.model],
    [["session", "models", 0, "id"], FieldMax.model],
    [["session", "models", 0, "name"], FieldMax.model],
    [["session", "models", 0, "input"], FieldMax.modelInputs],
    [["session", "models", 0, "input", 0], FieldMax.modelInput],
  ]);
  // The plugin lists fewer models than the daemon takes; the daemon's own bound still holds.
  const many = Array.from({ length: FieldMax.models + 1 }, () => session.models![0]);
  assert.ok(
    !HelloFrame.safeParse({ ...envelope("hello", 0), session: { ...session, models: many } }).success,
  );
});

Deno.test("message events the plugin maps from overlong pi data are cut at the daemon's bounds", () => {
  const origins = new Origins();
  const images = Array.from({ length: 150 }, () => ({ mimeType: long(300), data: "aGk=" }));
  const content = [{ type: "text", text: "hi" }, ...images.map((i) => ({ type: "image", ...i }))];
  origins.add({ promptId: long(), by: long(), message: "hi", images });
  const web = origins.take(content)!;
  const pi = { role: "user", timestamp: "9".repeat(500), content };
  const id = messageId(pi, 7);
  const message = toMessage(pi, id, web);
  atBounds(MessageEndEvent, { ...envelope("message_end"), message, from: fromOf(web) }, [
    [["message", "id"], FieldMax.messageId],
    [["message", "images"], FieldMax.images],
    [["message", "images", 0, "mimeType"], FieldMax.mimeType],
    [["from", "promptId"], FieldMax.promptId],
    [["from", "by"], FieldMax.by],
  ]);
  atBounds(MessageStartEvent, { ...envelope("message_start"), message: { role: "user", id } }, [
    [["message", "id"], FieldMax.messageId],
  ]);
});

Deno.test("approval and command frames the plugin sends are cut at the daemon's bounds", async () => {
  const sent: { type: string; payload: Record<string, unknown> }[] = [];
  const link = {
    policy: "all",
    policyKnown: true,
    emitFrame: (type: string, payload: Record<string, unknown>) => {
      sent.push({ type, payload });
      return { ...envelope(type), ...payload };
    },
    emit: (type: string, payload: Record<string, unknown>) => sent.push({ type, payload }),
    emitNow: (type: string, payload: Record<string, unknown>) => sent.push({ type, payload }),
  } as unknown as Link;
  const approvals = new Approvals({ link: () => link, localAsk: [], timeoutMs: 0, log: quiet });
  const done = approvals.toolCall({ toolName: long(), toolCallId: long(), input: {} }, {} as PiContext);
  const request = sent.find((s) => s.type === "approval_request")!.payload;
  approvals.decide({
    type: "approval_decision",
    approvalId: String(request.approvalId),
    decision: "approve",
    by: long(),
  });
  assert.equal(await done, undefined, "approved: the tool runs");
  atBounds(ApprovalRequestEvent, { ...envelope("approval_request"), ...request }, [
    [["toolName"], FieldMax.toolName],
    [["toolCallId"], FieldMax.toolCallId],
  ]);
  const resolved = sent.find((s) => s.type === "approval_resolved")!.payload;
  atBounds(ApprovalResolvedEvent, { ...envelope("approval_resolved"), ...resolved }, [[["by"], FieldMax.by]]);

  // command_result's error, through the method the link answers with (the session's commands, which emit it
  // on the link).
  new DaemonCommands(link, quiet).commandResult({ type: "changes", commandId: "c-1" }, long());
  const result = sent.find((s) => s.type === "command_result")!.payload;
  atBounds(CommandResultEvent, { ...envelope("command_result"), ...result }, [[
    ["error"],
    FieldMax.commandError,
  ]]);
  assert.ok(AgentEvent.safeParse({ ...envelope("command_result"), ...result }).success);
});

Deno.test("a set_name the plugin applies is cut at the bound the daemon's rename route checks", () => {
  let applied = "";
  setName(
    { type: "set_name", commandId: "c", name: long() },
    {
      pi: { setSessionName: (n: string) => applied = n },
      ctx: () => ({}),
      changed: () => {},
      log: () => {},
    } as unknown as Parameters<typeof setName>[1],
    (error) => assert.equal(error, undefined),
  );
  atBounds(NameBody, { name: applied }, [[["name"], FieldMax.newName]]);
});

Deno.test("no plugin source cuts a field to a number FieldMax defines (it names the bound instead)", async () => {
  const bounds = new Set<number>(Object.values(FieldMax));
  // A cut: field(x, N), clip(x, N) or .slice(0, N) with a literal N.
  const cut = /(?:\bfield|\bclip|\.slice)\((?:[^()]|\([^()]*\))*?,\s*([\d_]+)\s*\)/g;
  const found: string[] = [];
  let files = 0;
  for await (const e of Deno.readDir(new URL("../plugin/src/", import.meta.url))) {
    if (!e.name.endsWith(".ts") || e.name.endsWith("_test.ts")) continue;
    files++;
    const text = await Deno.readTextFile(new URL(`../plugin/src/${e.name}`, import.meta.url));
    text.split("\n").forEach((line, i) => {
      for (const m of line.matchAll(cut)) {
        if (bounds.has(Number(m[1].replaceAll("_", "")))) {
          found.push(`plugin/src/${e.name}:${i + 1}: ${m[0]}`);
        }
      }
    });
  }
  assert.ok(files > 10, "the plugin's sources were read");
  assert.deepEqual(found, [], "use FieldMax from lib/wire.ts");
  // The pattern itself finds the cuts it is meant to.
  const probe = [
    "field(m?.id, 200)",
    "field(pi.getThinkingLevel?.(), 20)",
    "x.slice(0, 100)",
    'clip(JSON.stringify(a) ?? "", 2000)',
  ];
  for (const p of probe) assert.equal([...p.matchAll(cut)].length, 1, p);
});
