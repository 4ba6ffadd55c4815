import assert from "node:assert/strict";
import { onRetryRequest, publishStatus, requestRetry, subscribeStatus } from "./status_bus.ts";
import type { SocketStatus } from "./live_socket.ts";

Deno.test("status bus: late listeners get the latest status; retries reach the owner", () => {
  publishStatus({ state: "connecting", attempt: 0 });
  publishStatus({ state: "open", attempt: 0 });
  const seen: SocketStatus[] = [];
  const stop = subscribeStatus((s) => seen.push(s));
  publishStatus({ state: "retrying", attempt: 1, retryInMs: 500 });
  stop();
  publishStatus({ state: "open", attempt: 0 });
  assert.deepEqual(seen.map((s) => s.state), ["open", "retrying"]);

  let retries = 0;
  const off = onRetryRequest(() => retries++);
  requestRetry();
  off();
  requestRetry();
  assert.equal(retries, 1);
});
