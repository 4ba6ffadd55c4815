import assert from "node:assert/strict";
import { MESSAGE_TYPES } from "../lib/protocol.ts";

const doc = await Deno.readTextFile(new URL("../PROTOCOL.md", import.meta.url));

/** The message types of the table that follows `heading`: the back-quoted first cell of each row. */
function typesUnder(heading: string): string[] {
  const start = doc.indexOf(heading);
  assert.ok(start >= 0, `PROTOCOL.md has a section "${heading}"`);
  const table = doc.slice(start).split("\n").slice(1);
  const rows: string[] = [];
  let inTable = false;
  for (const line of table) {
    if (line.startsWith("|")) inTable = true;
    else if (inTable) break;
    else continue;
    const m = /^\|\s*`([a-z_]+)`\s*\|/.exec(line);
    if (m) rows.push(m[1]);
  }
  return rows.sort();
}

Deno.test("PROTOCOL.md and lib/protocol.ts name the same message types", async (t) => {
  const sections: [string, string[]][] = [
    ["### Plugin → daemon", MESSAGE_TYPES.pluginToDaemon],
    ["### Daemon → plugin", MESSAGE_TYPES.daemonToPlugin],
    ["Daemon → browser:", MESSAGE_TYPES.daemonToBrowser],
    ["Browser → daemon:", MESSAGE_TYPES.browserToDaemon],
  ];
  for (const [heading, types] of sections) {
    await t.step(heading, () => assert.deepEqual(typesUnder(heading), [...types].sort()));
  }
});
