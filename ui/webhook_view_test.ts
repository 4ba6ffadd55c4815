import assert from "node:assert/strict";
import { attemptClass, attemptText, randomSecret, shownUrl, when } from "./webhook_view.ts";

const attempt = (over: Partial<Parameters<typeof attemptText>[0]>) => ({
  deliveryId: "d1",
  type: "run.settled",
  at: 0,
  status: 200,
  latencyMs: 12,
  error: null,
  state: "delivered",
  ...over,
});

Deno.test("webhook view: a URL's query (a receiver's key) is never shown", () => {
  assert.equal(shownUrl("https://hooks.example.com/in?key=s3cret&x=1"), "https://hooks.example.com/in?…");
  assert.equal(shownUrl("http://127.0.0.1:9000/hook"), "http://127.0.0.1:9000/hook");
  assert.equal(shownUrl("not a url"), "not a url");
});

Deno.test("webhook view: attempts in words and classes", () => {
  assert.equal(attemptText(attempt({})), "HTTP 200 in 12 ms");
  assert.equal(attemptClass(attempt({})), "done");
  const retry = attempt({ status: 503, state: "pending" });
  assert.equal(attemptText(retry), "HTTP 503 in 12 ms, will retry");
  assert.equal(attemptClass(retry), "pending");
  const gone = attempt({ status: null, error: "connection refused", state: "failed" });
  assert.equal(attemptText(gone), "connection refused in 12 ms, gave up");
  assert.equal(attemptClass(gone), "error");
  assert.equal(when(Date.UTC(2026, 11, 1, 13, 45, 7)), "2026-12-01 13:45:07");
});

Deno.test("webhook view: generated secrets are 64 hex characters and differ", () => {
  const a = randomSecret(), b = randomSecret();
  assert.match(a, /^[0-9a-f]{64}$/);
  assert.notEqual(a, b);
});
