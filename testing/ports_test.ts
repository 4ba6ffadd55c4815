import assert from "node:assert/strict";
import { freePort, reservePort } from "./ports.ts";

const PORTS = new URL("./ports.ts", import.meta.url).href;

/** Run `code` (with `freePort` and `reservePort` in scope) in a child process; its output, trimmed. */
async function inChild(code: string): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", `import { freePort, reservePort } from ${JSON.stringify(PORTS)}; ${code}`],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  assert.ok(out.success);
  return new TextDecoder().decode(out.stdout).trim();
}

Deno.test("freePort(): below the ephemeral range, free, and never the same twice", () => {
  const ports = Array.from({ length: 20 }, () => freePort());
  assert.equal(new Set(ports).size, ports.length);
  for (const port of ports) {
    assert.ok(port >= 20_000 && port < 32_768, String(port));
    Deno.listen({ hostname: "127.0.0.1", port }).close();
    assert.equal(reservePort(port), false, "this process holds it already");
  }
});

Deno.test("reservePort(): another process cannot take a port this one holds, and takes it once this one exits", async () => {
  const mine = freePort();
  assert.equal(await inChild(`console.log(reservePort(${mine}))`), "false");
  const theirs = Number(await inChild("console.log(freePort())"));
  assert.equal(reservePort(theirs), true, "the child's reservation ended with it");
});

Deno.test("reservePort(): a port something listens on is not reserved", () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    assert.equal(reservePort((listener.addr as Deno.NetAddr).port), false);
  } finally {
    listener.close();
  }
});
