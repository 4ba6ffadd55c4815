import assert from "node:assert/strict";
import fs from "node:fs";
import { SettingsGuard } from "./settings_guard.ts";

const noLog = Object.assign(() => {}, { flushSync() {} });

Deno.test("SettingsGuard restores the original bytes after pi's write, and keeps a later change of others", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-guard-" });
  const file = `${dir}/settings.json`;
  const original = JSON.stringify({ defaultProvider: "fake", defaultModel: "a" });
  fs.writeFileSync(file, original);
  const guard = new SettingsGuard(file, noLog as never);
  try {
    guard.before();
    // pi's queued write lands a little after setModel resolved.
    setTimeout(
      () => fs.writeFileSync(file, JSON.stringify({ defaultProvider: "fake", defaultModel: "b" }, null, 2)),
      30,
    );
    await guard.after({ provider: "fake", model: "b" });
    assert.equal(fs.readFileSync(file, "utf8"), original);
    // A later settings write by pi carries the in-memory default again, beside a real change.
    fs.writeFileSync(file, JSON.stringify({ defaultProvider: "fake", defaultModel: "b", theme: "dark" }));
    assert.equal(guard.check(), "restored");
    assert.deepEqual(JSON.parse(fs.readFileSync(file, "utf8")), {
      defaultProvider: "fake",
      defaultModel: "a",
      theme: "dark",
    });
    // pi holds its lock: nothing is written until it lets go.
    fs.writeFileSync(file, JSON.stringify({ defaultProvider: "fake", defaultModel: "b" }));
    fs.mkdirSync(`${file}.lock`);
    assert.equal(guard.check(), "busy");
    fs.rmdirSync(`${file}.lock`);
    assert.equal(guard.check(), "restored");
    assert.equal(fs.readFileSync(file, "utf8"), original);
    // A model chosen in the terminal afterwards is that person's default.
    guard.release();
    fs.writeFileSync(file, JSON.stringify({ defaultProvider: "fake", defaultModel: "c" }));
    assert.equal(guard.check(), "clean");
  } finally {
    guard.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
