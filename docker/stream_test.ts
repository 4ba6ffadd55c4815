import assert from "node:assert/strict";
import { collectOutput, demux, readBuildStream } from "./stream.ts";

function frame(kind: number, text: string): Uint8Array<ArrayBuffer> {
  const data = new TextEncoder().encode(text);
  const out = new Uint8Array(8 + data.length);
  out[0] = kind;
  new DataView(out.buffer).setUint32(4, data.length);
  out.set(data, 8);
  return out;
}

/** Split bytes into chunks of `size` so frames straddle chunk boundaries. */
function chunked(bytes: Uint8Array<ArrayBuffer>, size: number): ReadableStream<Uint8Array<ArrayBuffer>> {
  const parts: Uint8Array<ArrayBuffer>[] = [];
  for (let i = 0; i < bytes.length; i += size) parts.push(bytes.slice(i, i + size));
  return ReadableStream.from(parts);
}

const joined = (...parts: Uint8Array<ArrayBuffer>[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) (out.set(p, at), at += p.length);
  return out;
};

Deno.test("demux() splits frames that straddle chunks", async () => {
  const bytes = joined(
    frame(1, "hello out\n"),
    frame(2, "err line\n"),
    frame(1, "é and more\n"),
    frame(1, ""),
  );
  for (const size of [1, 3, 8, 9, 1000]) {
    const out = await collectOutput(chunked(bytes, size));
    assert.deepEqual(out, { stdout: "hello out\né and more\n", stderr: "err line\n" }, `chunk size ${size}`);
  }
});

Deno.test("demux() rejects a stream that is not multiplexed or ends mid-frame", async () => {
  const tty = new TextEncoder().encode("raw tty output\r\n");
  await assert.rejects(() => collectOutput(chunked(tty, 100)), /not a multiplexed stream/);
  const cut = frame(1, "truncated").slice(0, 12);
  await assert.rejects(async () => {
    for await (const _ of demux(chunked(cut, 5))) { /* drain */ }
  }, /ended inside a frame/);
});

Deno.test("readBuildStream() reads to the end and keeps the error", async () => {
  const text = [
    '{"stream":"Step 1/3 : FROM base\\n"}',
    '{"stream":" ---\\u003e abc\\n"}',
    '{"status":"progress"}',
    "not json",
    '{"errorDetail":{"message":"The command \'/bin/sh -c false\' returned a non-zero code: 1"},"error":"x"}',
  ].join("\r\n");
  const lines: string[] = [];
  const result = await readBuildStream(chunked(new TextEncoder().encode(text), 7), (l) => lines.push(l));
  assert.equal(result.error, "The command '/bin/sh -c false' returned a non-zero code: 1");
  assert.deepEqual(lines, ["Step 1/3 : FROM base", " ---> abc"]);
});
