import assert from "node:assert/strict";
import { join } from "node:path";
import { Store } from "./store.ts";
import { GITLAB_TOKEN, GITLAB_USERNAME, HOOK_GITLAB_SECRET, Settings } from "./settings.ts";
import { SqliteSettingsLog } from "./storage/sqlite_settings_log.ts";
import { waitFor } from "../testing/daemon.ts";

Deno.test("settings on SQLite: read at once after a restart, written through, told of another writer", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-settings-" });
  try {
    const path = join(dir, "lvmh.db");
    let store = new Store(path);
    let settings = Settings.sqlite(store);
    assert.equal(settings.get(GITLAB_TOKEN), null);
    await settings.put({
      [GITLAB_TOKEN]: "glpat-x",
      [GITLAB_USERNAME]: "bob",
      [HOOK_GITLAB_SECRET]: "s3cret",
    });
    assert.equal(settings.get(GITLAB_TOKEN), "glpat-x", "read back at once");
    const listed = await settings.list();
    assert.deepEqual(listed.find((e) => e.key === GITLAB_USERNAME), {
      key: GITLAB_USERNAME,
      secret: false,
      value: "bob",
    });
    assert.ok(!JSON.stringify(listed).includes("glpat-x") && !JSON.stringify(listed).includes("s3cret"));
    await settings.close();
    store.close();

    // A new daemon on the same file reads them synchronously, before anything was awaited.
    store = new Store(path);
    settings = Settings.sqlite(store);
    assert.equal(settings.get(GITLAB_TOKEN), "glpat-x");
    assert.equal(settings.get(HOOK_GITLAB_SECRET), "s3cret");
    // Another writer on the handle (as a second owner would be): the cache hears of it.
    const other = new SqliteSettingsLog(store);
    await other.put({ [GITLAB_TOKEN]: null, [HOOK_GITLAB_SECRET]: "n3w" });
    await waitFor(() => settings.get(HOOK_GITLAB_SECRET) === "n3w", "the change heard", 2_000);
    assert.equal(settings.get(GITLAB_TOKEN), null);
    await other.close();
    await settings.close();
    store.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
