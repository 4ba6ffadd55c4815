import assert from "node:assert/strict";
import { KubeClient } from "./client.ts";
import { UnavailableError } from "../errors.ts";
import { waitFor } from "../../testing/daemon.ts";
import { listenSilent } from "../../testing/silent_server.ts";

/** A client of an API server that takes the connection and never answers. */
function clientOfHungServer(callTimeoutMs?: number) {
  const hung = listenSilent({ port: 0 });
  const { port } = hung.addr as Deno.NetAddr;
  const client = new KubeClient({
    url: `http://127.0.0.1:${port}`,
    namespace: "lvmh",
    tokenFile: null,
    caFile: null,
    callTimeoutMs,
  });
  return { hung, client };
}

Deno.test("a call without a signal of its own ends when the API server never answers", async () => {
  const { hung, client } = clientOfHungServer(300);
  await using _ = hung;
  const error = await client.json("GET", client.path("pods")).catch((e) => e);
  assert.ok(error instanceof UnavailableError, String(error));
  assert.match(error.message, /unreachable: no answer in time/);
  assert.equal(hung.accepted(), 1);
});

Deno.test("close() cuts the calls in flight and every later one", async () => {
  const { hung, client } = clientOfHungServer();
  await using _ = hung;
  const held = client.json("GET", client.path("pods")).then(() => "answered", (e) => e);
  await waitFor(() => hung.accepted() === 1, "the call's connection");
  client.close();
  const error = await held; // at once: the call's own 30 s bound would end it with another message
  assert.ok(error instanceof UnavailableError, String(error));
  assert.match(error.message, /the client is closed/);
  await assert.rejects(() => client.json("GET", "/version"), UnavailableError);
  assert.equal(hung.accepted(), 1, "a call after close() does not connect");
});

Deno.test("a call's own signal still ends it with its own reason", async () => {
  const { hung, client } = clientOfHungServer();
  await using _ = hung;
  const error = await client.json("GET", "/version", { signal: AbortSignal.timeout(100) }).catch((e) => e);
  assert.equal((error as DOMException).name, "TimeoutError");
  client.close();
});
