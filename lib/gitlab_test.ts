import assert from "node:assert/strict";
import { createGitlab } from "./gitlab.ts";
import { ConflictError, InvalidError, UnavailableError } from "./errors.ts";
import { startGitlabFixture } from "../testing/fixtures/gitlab_fixture.ts";

/** The two parts createGitlab uses: a config with the URL and a map standing in for the settings. */
function core(gitlabUrl: string, settings = new Map<string, string>()) {
  const access = {
    get: (k: string) => settings.get(k) ?? null,
    put: (changes: Record<string, string | null>) => {
      for (const [k, v] of Object.entries(changes)) v === null ? settings.delete(k) : settings.set(k, v);
      return Promise.resolve();
    },
  };
  return { settings, core: { config: { gitlabUrl }, settings: access } };
}

const TOKEN = "glpat-unit-test-token";

Deno.test("gitlab: connect, status, repos over every page, disconnect", async (t) => {
  const fixture = startGitlabFixture({
    token: TOKEN,
    username: "bob",
    maxPerPage: 2,
    projects: [
      { path: "team/old", lastActivityAt: "2026-01-01T00:00:00Z" },
      { path: "team/sub/newest", lastActivityAt: "2026-11-29T00:00:00Z", defaultBranch: "develop" },
      { path: "team/mid", lastActivityAt: "2026-06-01T00:00:00Z" },
      { path: "team/bad path", lastActivityAt: "2026-07-01T00:00:00Z" },
      { path: "other/x", lastActivityAt: "2026-05-01T00:00:00Z" },
    ],
  });
  const { core: c, settings } = core(fixture.url);
  const gitlab = createGitlab(c);
  try {
    await t.step("not connected at first; repos is a 409", async () => {
      assert.deepEqual(gitlab.status(), { connected: false, baseUrl: fixture.url });
      const error = await gitlab.repos().catch((e) => e);
      assert.ok(error instanceof ConflictError);
    });
    await t.step("a rejected token is a 400 and is not stored", async () => {
      const error = await gitlab.connect("glpat-wrong").catch((e) => e);
      assert.ok(error instanceof InvalidError, String(error));
      assert.ok(!error.message.includes("glpat-wrong"));
      assert.equal(settings.size, 0);
    });
    await t.step("a valid token is stored; status names the user, not the token", async () => {
      assert.deepEqual(await gitlab.connect(TOKEN), { username: "bob" });
      assert.deepEqual(gitlab.status(), { connected: true, baseUrl: fixture.url, username: "bob" });
      assert.ok(!JSON.stringify(gitlab.status()).includes(TOKEN));
      assert.equal(gitlab.credential(), TOKEN);
    });
    await t.step("repos: every page, newest first, unspawnable paths dropped", async () => {
      const repos = await gitlab.repos();
      assert.deepEqual(repos.map((r) => r.path), ["team/sub/newest", "team/mid", "other/x", "team/old"]);
      assert.deepEqual(repos[0], {
        path: "team/sub/newest",
        name: "newest",
        namespace: "team/sub",
        lastActivityAt: "2026-11-29T00:00:00Z",
        webUrl: `${fixture.url}/team/sub/newest`,
        defaultBranch: "develop",
      });
      const pages = fixture.requests.filter((r) => r.path.startsWith("/api/v4/projects"));
      assert.equal(pages.length, 3);
      // A second read within the TTL is served from memory; refresh reads GitLab again.
      assert.deepEqual(await gitlab.repos(), repos);
      assert.equal(fixture.requests.filter((r) => r.path.startsWith("/api/v4/projects")).length, 3);
      await gitlab.repos({ refresh: true });
      assert.equal(fixture.requests.filter((r) => r.path.startsWith("/api/v4/projects")).length, 6);
      assert.ok(
        pages.every((p) =>
          p.authorized && /membership=true/.test(p.path) && /order_by=last_activity_at/.test(p.path)
        ),
      );
      assert.equal(gitlab.cloneUrl("team/mid"), `${fixture.url}/team/mid.git`);
    });
    await t.step("a token stored for another GitLab URL is not used", () => {
      const other = createGitlab(core("https://gitlab.example.invalid", settings).core);
      assert.equal(other.credential(), null);
      assert.equal(other.status().connected, false);
    });
    await t.step("a revoked token makes repos a 409", async () => {
      settings.set("gitlab.token", "glpat-revoked");
      const error = await gitlab.repos({ refresh: true }).catch((e) => e);
      assert.ok(error instanceof ConflictError, String(error));
      assert.match(error.message, /connect again/);
    });
    await t.step("disconnect forgets everything", async () => {
      await gitlab.disconnect();
      assert.equal(settings.size, 0);
      assert.equal(gitlab.status().connected, false);
    });
  } finally {
    await fixture.close();
  }
});

Deno.test("gitlab: an unreachable GitLab is UnavailableError (503)", async () => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  const gitlab = createGitlab(core(`http://127.0.0.1:${port}`).core);
  const error = await gitlab.connect(TOKEN).catch((e) => e);
  assert.ok(error instanceof UnavailableError, String(error));
  assert.match(error.message, new RegExp(`127\\.0\\.0\\.1:${port}`));
  assert.ok(!error.message.includes(TOKEN));
});
