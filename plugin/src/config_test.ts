/** Settings from the environment. */
import assert from "node:assert/strict";
import { parseAsk, readConfig } from "./config.ts";

Deno.test("config: LVMH_ASK is a comma list or all, LVMH_ASK_TIMEOUT seconds", () => {
  assert.deepEqual(parseAsk(" bash, edit ,,"), ["bash", "edit"]);
  assert.equal(parseAsk("all"), "all");
  assert.deepEqual(parseAsk(undefined), []);
  const cfg = readConfig({
    env: { LVMH_ASK: "write", LVMH_ASK_TIMEOUT: "1.5" },
    home: "/h",
  });
  assert.deepEqual(cfg.ask, ["write"]);
  assert.equal(cfg.askTimeoutMs, 1500);
  assert.equal(
    readConfig({ env: { LVMH_ASK_TIMEOUT: "soon" }, home: "/h" }).askTimeoutMs,
    0,
  );
});
