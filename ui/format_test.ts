import assert from "node:assert/strict";
import { formatCost, formatTokens, imageLabel, prettyJson, relativeTime, shortPath } from "./format.ts";

Deno.test("relativeTime() reads like a person would say it", () => {
  const now = Date.UTC(2026, 10, 30, 12);
  assert.equal(relativeTime(null, now), "never");
  assert.equal(relativeTime(now - 10_000, now), "just now");
  assert.equal(relativeTime(now + 10_000, now), "just now", "clock skew is not 'in the future'");
  assert.equal(relativeTime(now - 5 * 60_000, now), "5 min ago");
  assert.equal(relativeTime(now - 3 * 3600_000, now), "3 h ago");
  assert.equal(relativeTime(now - 2 * 86400_000, now), "2 d ago");
  assert.equal(relativeTime(Date.UTC(2026, 0, 2), now), "2026-01-02");
});

Deno.test("formatTokens() and formatCost() keep small numbers readable", () => {
  assert.deepEqual([950, 1234, 12_345, 4_100_000].map(formatTokens), ["950", "1.2k", "12k", "4.1M"]);
  assert.deepEqual([0, 0.00421, 1.234].map(formatCost), ["$0", "$0.0042", "$1.23"]);
});

Deno.test("shortPath() and prettyJson()", () => {
  assert.equal(shortPath("/home/me/src/app/web"), "…/src/app/web");
  assert.equal(shortPath("/a/b"), "/a/b");
  assert.equal(prettyJson('{"a":1}'), '{\n  "a": 1\n}');
  assert.equal(prettyJson("not json"), "not json");
});

Deno.test("imageLabel(): names an image by type and size where it cannot be shown", () => {
  assert.equal(imageLabel({ mimeType: "image/png", bytes: 123_456 }), "image · PNG · 121 KB");
  assert.equal(imageLabel({ mimeType: "image/jpeg", bytes: 900 }), "image · JPEG · 900 B");
  assert.equal(imageLabel({ mimeType: "image/webp", bytes: 3 * 1024 * 1024 }), "image · WEBP · 3.0 MB");
});
