import assert from "node:assert/strict";
// @ts-types="./bridge/session_file.d.mts"
import { repairLastLine } from "./bridge/session_file.mjs";

Deno.test("repairLastLine() ends a torn session file with a newline, and leaves a whole one alone", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-session-file-" });
  try {
    const file = `${dir}/2026-12-01T00-00-00-000Z_s.jsonl`;
    await Deno.writeTextFile(file, '{"type":"session"}\n{"type":"message","id":"a"}\n{"type":"mess');
    assert.equal(repairLastLine(file), true);
    assert.equal(
      await Deno.readTextFile(file),
      '{"type":"session"}\n{"type":"message","id":"a"}\n{"type":"mess\n',
    );
    assert.equal(repairLastLine(file), false, "a file ending in a newline is left as it is");
    await Deno.writeTextFile(file, "");
    assert.equal(repairLastLine(file), false);
    assert.equal(await Deno.readTextFile(file), "");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
