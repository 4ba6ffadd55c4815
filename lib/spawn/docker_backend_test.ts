import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { repoVolumeName } from "./docker_backend.ts";

Deno.test("repoVolumeName() is a slug of the path and keeps look-alike paths apart", () => {
  const hash = (s: string) => createHash("sha256").update(s).digest("hex").slice(0, 6);
  assert.equal(
    repoVolumeName("group/sub/project"),
    `lvmh-repo-group--sub--project-${hash("group/sub/project")}`,
  );
  // Both read "a--b--c"; the hash suffix tells them apart.
  assert.notEqual(repoVolumeName("a/b--c"), repoVolumeName("a--b/c"));
  assert.match(repoVolumeName("a/b--c"), /^lvmh-repo-a--b--c-[0-9a-f]{6}$/);
  // Docker volume names: [a-zA-Z0-9][a-zA-Z0-9_.-]*, and short enough for one path component.
  const long = repoVolumeName("g/" + "x".repeat(250));
  assert.match(long, /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/);
  assert.ok(long.length <= 200, `${long.length}`);
});
