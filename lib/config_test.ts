import assert from "node:assert/strict";
import { ConfigError, loadConfig } from "./config.ts";

async function withDataDir(fn: (dir: string) => void) {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-config-" });
  try {
    fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
const base = (dir: string) => ({ LVMH_TOKEN: "test-token-0123456789abcdef", LVMH_DATA_DIR: dir });

Deno.test("loadConfig(): worker limits are off unless set, and sizes read as Docker reads them", () =>
  withDataDir((dir) => {
    assert.deepEqual(loadConfig(base(dir)).workerLimits, { memoryBytes: null, cpus: null, pids: null });
    const set = loadConfig({
      ...base(dir),
      LVMH_WORKER_MEMORY: "512m",
      LVMH_WORKER_CPUS: "1.5",
      LVMH_WORKER_PIDS: "256",
    });
    assert.deepEqual(set.workerLimits, { memoryBytes: 512 * 1024 ** 2, cpus: 1.5, pids: 256 });
    assert.equal(
      loadConfig({ ...base(dir), LVMH_WORKER_MEMORY: "4G" }).workerLimits.memoryBytes,
      4 * 1024 ** 3,
    );
    for (
      const [name, value] of [["LVMH_WORKER_MEMORY", "10m"], ["LVMH_WORKER_MEMORY", "1.5g"], [
        "LVMH_WORKER_PIDS",
        "8",
      ]]
    ) {
      assert.throws(
        () => loadConfig({ ...base(dir), [name]: value }),
        (e) => e instanceof ConfigError && e.message.startsWith(name),
      );
    }
  }));

Deno.test("loadConfig(): the stall time and the GitLab hook secret are read like every other variable", () =>
  withDataDir((dir) => {
    const plain = loadConfig(base(dir));
    assert.equal(plain.stallMinutes, 10);
    assert.equal(plain.gitlabHookSecret, null);
    const set = loadConfig({
      ...base(dir),
      LVMH_STALL_MINUTES: "2.5",
      LVMH_GITLAB_HOOK_SECRET: "a-secret-of-sixteen+",
    });
    assert.equal(set.stallMinutes, 2.5);
    assert.equal(set.gitlabHookSecret, "a-secret-of-sixteen+");
    assert.equal(
      loadConfig({ ...base(dir), LVMH_GITLAB_HOOK_SECRET: "" }).gitlabHookSecret,
      null,
      "empty: unset",
    );
    for (
      const [name, value] of [["LVMH_STALL_MINUTES", "-1"], ["LVMH_GITLAB_HOOK_SECRET", "x".repeat(257)]]
    ) {
      assert.throws(
        () => loadConfig({ ...base(dir), [name]: value }),
        (e) => e instanceof ConfigError && e.message.startsWith(name) && !e.message.includes("x".repeat(257)),
      );
    }
  }));

Deno.test("loadConfig(): the replica id is LVMH_REPLICA_ID, else the host name and pid", () =>
  withDataDir((dir) => {
    assert.equal(loadConfig(base(dir)).replicaId, `${Deno.hostname()}-${Deno.pid}`);
    assert.equal(loadConfig({ ...base(dir), LVMH_REPLICA_ID: "lvmh-0" }).replicaId, "lvmh-0");
    assert.throws(
      () => loadConfig({ ...base(dir), LVMH_REPLICA_ID: "a b" }),
      (e) => e instanceof ConfigError && e.message.startsWith("LVMH_REPLICA_ID"),
    );
  }));

Deno.test("loadConfig(): LVMH_DATABASE_URL selects PostgreSQL; a refusal never shows the URL's password", () =>
  withDataDir((dir) => {
    assert.equal(loadConfig(base(dir)).database, null, "unset: SQLite");
    assert.equal(loadConfig({ ...base(dir), LVMH_DATABASE_URL: "" }).database, null, "empty: unset");
    for (
      const url of [
        "postgres://lvmh:pw@db.internal:5432/lvmh",
        "postgresql://lvmh:pw@127.0.0.1/lvmh?sslmode=require",
        "postgres://lvmh:pw@[::1]:6432/lvmh?sslmode=verify-full&sslrootcert=system",
      ]
    ) {
      assert.deepEqual(loadConfig({ ...base(dir), LVMH_DATABASE_URL: url }).database, { url, caFile: null });
    }
    const password = "s3cret-Pa55word";
    for (
      const [url, why] of [
        [`mysql://lvmh:${password}@db:3306/lvmh`, "postgres://"],
        [`lvmh:${password}@db:5432/lvmh`, "postgres://"],
        [`postgres://lvmh:${password}@:5432/lvmh`, "postgres://"],
        [`postgres://lvmh:${password}@db/lvmh?sslmode=verify`, "sslmode must be one of"],
        [`postgres://lvmh:${password}@db/lvmh?sslrootcert=/etc/ca.pem`, "LVMH_DATABASE_CA_FILE"],
      ]
    ) {
      assert.throws(
        () => loadConfig({ ...base(dir), LVMH_DATABASE_URL: url }),
        (e) =>
          e instanceof ConfigError && e.message.startsWith("LVMH_DATABASE_URL: ") &&
          e.message.includes(why) &&
          !e.message.includes(password),
        url,
      );
    }
  }));

Deno.test("loadConfig(): LVMH_DATABASE_CA_FILE is a readable PEM, with a URL whose sslmode verifies", () =>
  withDataDir((dir) => {
    const url = "postgres://lvmh:pw@db:5432/lvmh";
    const ca = `${dir}/ca.pem`;
    Deno.writeTextFileSync(ca, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    assert.deepEqual(
      loadConfig({ ...base(dir), LVMH_DATABASE_URL: url, LVMH_DATABASE_CA_FILE: ca }).database,
      {
        url,
        caFile: ca,
      },
    );
    assert.equal(
      loadConfig({ ...base(dir), LVMH_DATABASE_URL: `${url}?sslmode=verify-ca`, LVMH_DATABASE_CA_FILE: ca })
        .database?.caFile,
      ca,
    );
    Deno.writeTextFileSync(`${dir}/not.pem`, "hello\n");
    for (
      const [env, why] of [
        [{ LVMH_DATABASE_CA_FILE: ca }, "without LVMH_DATABASE_URL"],
        [{ LVMH_DATABASE_URL: url, LVMH_DATABASE_CA_FILE: "ca.pem" }, "absolute path"],
        [{ LVMH_DATABASE_URL: url, LVMH_DATABASE_CA_FILE: `${dir}/missing.pem` }, "cannot read"],
        [{ LVMH_DATABASE_URL: url, LVMH_DATABASE_CA_FILE: `${dir}/not.pem` }, "no PEM certificate"],
        [
          { LVMH_DATABASE_URL: `${url}?sslmode=prefer`, LVMH_DATABASE_CA_FILE: ca },
          "verifies no certificate",
        ],
      ] as const
    ) {
      assert.throws(
        () => loadConfig({ ...base(dir), ...env }),
        (e) =>
          e instanceof ConfigError && e.message.startsWith("LVMH_DATABASE_CA_FILE: ") &&
          e.message.includes(why) &&
          !e.message.includes("pw@"),
        why,
      );
    }
  }));
