import assert from "node:assert/strict";
import { createEngine } from "../../docker/engine.ts";
import {
  DockerBadRequestError,
  DockerBuildError,
  DockerConflictError,
  DockerNotFoundError,
  DockerUnreachableError,
} from "../../docker/errors.ts";
import { createTar } from "../../docker/tar.ts";
import { BASE_IMAGE, dockerTest, ensureBaseImage, runOnce, testEngine, uniq } from "../../testing/docker.ts";

dockerTest("engine against a real Docker engine", async (t) => {
  const engine = testEngine();
  await ensureBaseImage();
  const id = uniq();
  const volume = `lvmh-test-vol-${id}`;
  const created: string[] = [];
  const image = `lvmh-test-build-${id}:latest`;
  try {
    await t.step("ping, volumes by label, idempotent create", async () => {
      await engine.ping();
      await engine.volumeCreate(volume, { "lvmh.test": id });
      await engine.volumeCreate(volume, { "lvmh.test": id });
      assert.deepEqual(await engine.volumeList({ "lvmh.test": id }), [volume]);
    });

    await t.step("create, start, wait, demultiplexed logs, list by label", async () => {
      const cid = await engine.containerCreate(`lvmh-test-${id}`, {
        Image: BASE_IMAGE,
        Cmd: ["sh", "-c", "echo out; echo err >&2; echo more; exit 7"],
        Labels: { "lvmh.test": id },
        HostConfig: { NetworkMode: "none", Init: true },
      });
      created.push(cid);
      const listed = await engine.containerList({ "lvmh.test": id });
      assert.equal(listed.length, 1);
      assert.equal(listed[0].Id, cid);
      await engine.containerStart(cid);
      assert.equal(await engine.containerWait(cid), 7);
      assert.deepEqual(await engine.containerLogs(cid), { stdout: "out\nmore\n", stderr: "err\n" });
      const info = await engine.containerInspect(cid);
      assert.equal(info.State.ExitCode, 7);
      assert.equal(info.HostConfig.Init, true);
    });

    await t.step("errors by kind: conflict, not found, bad request", async () => {
      const dup = await engine.containerCreate(`lvmh-test-${id}`, { Image: BASE_IMAGE }).catch((e) => e);
      assert.ok(dup instanceof DockerConflictError, String(dup));
      const noImage = await engine.containerCreate(`lvmh-test-x-${id}`, { Image: "lvmh-nope:latest" }).catch((
        e,
      ) => e);
      assert.ok(noImage instanceof DockerNotFoundError, String(noImage));
      const badMount = await engine.containerCreate(`lvmh-test-y-${id}`, {
        Image: BASE_IMAGE,
        HostConfig: { Mounts: [{ Type: "bind", Source: "/nonexistent/models.json", Target: "/m.json" }] },
      }).catch((e) => e);
      assert.ok(badMount instanceof DockerBadRequestError, String(badMount));
      assert.match(badMount.message, /bind source path does not exist/);
      const gone = await engine.containerRemove("lvmh-test-never-existed").catch((e) => e);
      assert.ok(gone instanceof DockerNotFoundError);
      const inUse = await (async () => {
        const cid = await engine.containerCreate(`lvmh-test-z-${id}`, {
          Image: BASE_IMAGE,
          Labels: { "lvmh.test": id },
          HostConfig: { Mounts: [{ Type: "volume", Source: volume, Target: "/v" }] },
        });
        created.push(cid);
        return await engine.volumeRemove(volume).catch((e) => e);
      })();
      assert.ok(inUse instanceof DockerConflictError, String(inUse));
    });

    await t.step("archive into a created container, readable once it runs", async () => {
      const cid = await engine.containerCreate(`lvmh-test-a-${id}`, {
        Image: BASE_IMAGE,
        User: "1000:1000",
        Cmd: ["sh", "-c", "stat -c '%a %u %g' /tmp/secret; cat /tmp/secret"],
        Labels: { "lvmh.test": id },
        HostConfig: { NetworkMode: "none" },
      });
      created.push(cid);
      const tar = createTar([{
        path: "secret",
        type: "file",
        data: new TextEncoder().encode("s3cret"),
        mode: 0o400,
        uid: 1000,
        gid: 1000,
      }]);
      await engine.containerPutArchive(cid, "/tmp", tar);
      await engine.containerStart(cid);
      assert.equal(await engine.containerWait(cid), 0);
      const { stdout } = await engine.containerLogs(cid);
      assert.equal(stdout, "400 1000 1000\ns3cret");
    });

    await t.step("build: failure inside a 200 stream, then a local base that works", async () => {
      const bad = createTar([{
        path: "Dockerfile",
        type: "file",
        data: new TextEncoder().encode("FROM lvmh-missing-base:1\n"),
      }]);
      const failed = await engine.imageBuild(bad as Uint8Array<ArrayBuffer>, {
        tag: image,
        dockerfile: "Dockerfile",
      })
        .catch((e) => e);
      assert.ok(failed instanceof DockerBuildError, String(failed));
      // The engine tries the registry for a base that is not local; no registry is reachable here.
      assert.match(failed.message, /^Cannot build image "[^"]+": .*(registry|lvmh-missing-base)/);
      const good = createTar([{
        path: "Dockerfile",
        type: "file",
        data: new TextEncoder().encode(
          `ARG BASE\nFROM \${BASE}\nRUN echo built > /built\nCMD ["cat", "/built"]\n`,
        ),
      }]);
      const lines: string[] = [];
      await engine.imageBuild(good as Uint8Array<ArrayBuffer>, {
        tag: image,
        dockerfile: "Dockerfile",
        buildargs: { BASE: BASE_IMAGE },
        labels: { "lvmh.test": id },
        onLine: (l) => lines.push(l),
      });
      assert.ok(lines.some((l) => l.startsWith("Step 1/")), lines.join("\n"));
      assert.equal(await engine.imageExists(image), true);
      const run = await runOnce(engine, image, ["cat", "/built"]);
      assert.deepEqual([run.code, run.stdout], [0, "built\n"]);
    });

    await t.step("an engine that is not there is unreachable, named by its socket", async () => {
      const missing = createEngine({ socketPath: `/tmp/lvmh-no-engine-${id}.sock` });
      const error = await missing.ping().catch((e) => e);
      assert.ok(error instanceof DockerUnreachableError, String(error));
      assert.match(error.message, new RegExp(`unix:///tmp/lvmh-no-engine-${id}\\.sock`));
    });
  } finally {
    for (const cid of created) await engine.containerRemove(cid, true).catch(() => {});
    await engine.volumeRemove(volume, true).catch(() => {});
    await engine.imageRemove(image, true).catch(() => {});
  }
  assert.deepEqual(await engine.containerList({ "lvmh.test": id }), []);
});
