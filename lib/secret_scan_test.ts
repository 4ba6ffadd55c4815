import assert from "node:assert/strict";
import { describeFindings, scanDiff, secretKind } from "./secret_scan.ts";

// Built from parts, so this file itself never looks like it holds a secret.
const GLPAT = "glpat-" + "aB3dE5fG7hJ9kL1mN3pQ";
const AKIA = "AKIA" + "IOSFODNN7EXAMPLE";
const GHP = "ghp_" + "a".repeat(36);
const GITHUB_PAT = "github_pat_" + "11ABCDEFG0".repeat(3);
const SLACK = "xoxb-" + "1234567890-abcdefghij";
const KEY = "-----BEGIN " + "OPENSSH PRIVATE KEY-----";

Deno.test("secretKind: the well-known token shapes", () => {
  assert.equal(secretKind(`token = "${GLPAT}"`), "GitLab token");
  assert.equal(secretKind(`aws_access_key_id=${AKIA}`), "AWS access key");
  assert.equal(secretKind(KEY), "private key");
  assert.equal(secretKind("-----BEGIN " + "PRIVATE KEY-----"), "private key");
  assert.equal(secretKind("-----BEGIN " + "RSA PRIVATE KEY-----"), "private key");
  assert.equal(secretKind(GHP), "GitHub token");
  assert.equal(secretKind(GITHUB_PAT), "GitHub token");
  assert.equal(secretKind(SLACK), "Slack token");
  assert.equal(secretKind("xoxp-" + "1234567890-abcdef"), "Slack token");
  for (
    const harmless of ["glpat-short", "AKIA", "ghp_x", "-----BEGIN PUBLIC KEY-----", "xoxb-", "const a = 1;"]
  ) {
    assert.equal(secretKind(harmless), null, harmless);
  }
});

Deno.test("scanDiff: only added lines, named file:line in the new version", () => {
  const diff = [
    "diff --git a/src/app.ts b/src/app.ts",
    "index 1111111..2222222 100644",
    "--- a/src/app.ts",
    "+++ b/src/app.ts",
    "@@ -1,3 +1,4 @@",
    " line one",
    `-old = "${GHP}"`,
    "+new = 1",
    " line three",
    `+const token = "${GLPAT}";`,
    "@@ -20,2 +21,3 @@ function x() {",
    " a",
    `+${AKIA}`,
    " b",
    "diff --git a/keys/id b/keys/id",
    "new file mode 100644",
    "--- /dev/null",
    "+++ b/keys/id",
    "@@ -0,0 +1,2 @@",
    `+${KEY}`,
    "+abc",
    "diff --git a/gone.txt b/gone.txt",
    "deleted file mode 100644",
    "--- a/gone.txt",
    "+++ /dev/null",
    "@@ -1 +0,0 @@",
    `-${SLACK}`,
  ].join("\n");
  const found = scanDiff(diff);
  assert.deepEqual(found, [
    { file: "src/app.ts", line: 4, kind: "GitLab token" },
    { file: "src/app.ts", line: 22, kind: "AWS access key" },
    { file: "keys/id", line: 1, kind: "private key" },
  ]);
  assert.equal(
    describeFindings(found),
    "src/app.ts:4 (GitLab token), src/app.ts:22 (AWS access key), keys/id:1 (private key)",
  );
});

Deno.test("scanDiff: git log -p of several commits, quoted paths, a header line that looks added", () => {
  const diff = [
    "commit 0123456789012345678901234567890123456789",
    "Author: a <a@a>",
    "",
    "    add things",
    "",
    'diff --git "a/we ird\\tname" "b/we ird\\tname"',
    "new file mode 100644",
    "--- /dev/null",
    '+++ "b/we ird\\tname"',
    "@@ -0,0 +1 @@",
    `+${SLACK}`,
    "",
    "commit 1111111111111111111111111111111111111111",
    "",
    "    +++ not a header",
    "",
    "diff --git a/x b/x",
    "--- a/x",
    "+++ b/x",
    "@@ -5 +5 @@",
    "-a",
    `+${GITHUB_PAT}`,
  ].join("\n");
  assert.deepEqual(scanDiff(diff), [
    { file: "we ird\tname", line: 1, kind: "Slack token" },
    { file: "x", line: 5, kind: "GitHub token" },
  ]);
  assert.deepEqual(scanDiff(""), []);
  assert.equal(scanDiff(diff, 1).length, 1);
});
