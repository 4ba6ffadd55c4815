import assert from "node:assert/strict";
import { errorResponse, HttpError, readText } from "./http.ts";
import {
  ConflictError,
  ForbiddenError,
  InvalidError,
  NotFoundError,
  sessionNotFound,
  sessionOffline,
  TooLargeError,
  UnavailableError,
  UpstreamError,
} from "./errors.ts";
import { ImageMissingError, RetryableError } from "./spawn/backend.ts";
import { WriteRefused } from "./write_gate.ts";

async function answer(error: unknown): Promise<[number, unknown, string | null]> {
  const res = errorResponse(error);
  return [res.status, await res.json(), res.headers.get("content-type")];
}

Deno.test("errorResponse() maps each domain kind to its one status, with its message as {error}", async () => {
  const kinds: [Error, number][] = [
    [new InvalidError("bad id"), 400],
    [new ForbiddenError("not yours"), 403],
    [new NotFoundError("no such thing"), 404],
    [new ConflictError("already decided"), 409],
    [new UpstreamError("build failed"), 502],
    [new UnavailableError("Docker is down"), 503],
    [new TooLargeError("images: larger than 20971520 bytes together"), 413],
    // The SQLite file refusing writes for a while: the daemon is unavailable, not broken.
    [new WriteRefused(new Error("database or disk is full")), 503],
    // Subclasses keep their kind's status (the spawn backend's retry and missing-image errors).
    [new RetryableError("start hiccup"), 502],
    [new ImageMissingError("image gone"), 502],
    [sessionNotFound("a1"), 404],
    [sessionOffline("a1"), 409],
  ];
  for (const [error, status] of kinds) {
    const [got, body, type] = await answer(error);
    assert.equal(got, status, error.name);
    assert.deepEqual(body, { error: error.message });
    assert.match(type ?? "", /^application\/json/);
  }
  assert.deepEqual((await answer(sessionNotFound("a1")))[1], { error: 'Session "a1" does not exist' });
});

Deno.test("errorResponse() keeps an HttpError's status and headers", async () => {
  const res = errorResponse(new HttpError(429, "slow down", { "retry-after": "3" }));
  assert.equal(res.status, 429);
  assert.equal(res.headers.get("retry-after"), "3");
  assert.deepEqual(await res.json(), { error: "slow down" });
});

Deno.test("errorResponse() answers anything else 500 'internal error' and logs it, never showing it", async () => {
  const logged: unknown[][] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => logged.push(args);
  try {
    for (
      const thrown of [
        new Error("SQLITE_CORRUPT at /secret/path"),
        new TypeError("x is undefined"),
        "a string",
      ]
    ) {
      const [status, body] = await answer(thrown);
      assert.equal(status, 500);
      assert.deepEqual(body, { error: "internal error" });
    }
  } finally {
    console.error = original;
  }
  assert.equal(logged.length, 3);
  assert.ok(String(logged[0].at(-1)).includes("SQLITE_CORRUPT"), "the cause goes to the log");
});

Deno.test("readText() reads a body up to its limit and refuses one over it, declared or streamed", async () => {
  const post = (body: BodyInit, headers: Record<string, string> = {}) =>
    new Request("http://x/", { method: "POST", body, headers });
  assert.equal(await readText(post("token=é"), 8), "token=é");
  assert.equal(await readText(new Request("http://x/"), 8), "");
  const tooLarge = (e: unknown) => e instanceof HttpError && e.status === 413;
  await assert.rejects(readText(post("123456789"), 8), tooLarge);
  await assert.rejects(readText(post("1", { "content-length": "9" }), 8), tooLarge);
  const stream = new ReadableStream({
    start(c) {
      for (let i = 0; i < 3; i++) c.enqueue(new TextEncoder().encode("1234"));
      c.close();
    },
  });
  await assert.rejects(readText(post(stream), 8), tooLarge);
});
