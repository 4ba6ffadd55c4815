import assert from "node:assert/strict";
import { createSseParser, type SseMessage } from "./sse.ts";

Deno.test("sse: events split anywhere, CRLF, comments, multi-line data, named events", () => {
  const got: SseMessage[] = [];
  const feed = createSseParser((m) => got.push(m));
  const stream =
    ': hi\r\nid: 1\r\ndata: {"a":1}\r\n\r\nid: 2\ndata: x\ndata: y\n\nevent: session_deleted\ndata: {}\n\n';
  for (const ch of stream) feed(ch);
  feed("id: 3\ndata: no end yet\n");
  assert.deepEqual(got, [
    { id: "1", event: "message", data: '{"a":1}' },
    { id: "2", event: "message", data: "x\ny" },
    { id: null, event: "session_deleted", data: "{}" },
  ]);
});
