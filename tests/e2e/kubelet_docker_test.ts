/**
 * The fake API server's Docker kubelet with a real dockerd: Pods really run (init container, then the
 * container), with a claim as a Docker volume, a Secret as files with their mode and the fsGroup, env from a
 * Secret, memory limits (a real OOMKilled), the termination message file, graceful deletion (SIGTERM, exit
 * 143, then DELETED) and pods/log from the containers' own output. Status is read through watches, as the
 * Kubernetes backend reads it.
 */
import { BASE_IMAGE, dockerTest, ensureBaseImage, testEngine, uniq } from "../../testing/docker.ts";
import type { FakeKube } from "../../testing/fixtures/kube_api.ts";
import type { kubeClient, WatchEvent } from "../../testing/fixtures/kube/client.ts";
import { withFake } from "../../testing/fixtures/kube/with_fake.ts";
import assert from "node:assert/strict";

type Json = Record<string, unknown>;

async function withKubelet(fn: (k: FakeKube, c: Awaited<ReturnType<typeof kubeClient>>) => Promise<void>) {
  await ensureBaseImage();
  await withFake(fn, { kubelet: "docker", dockerEngine: testEngine() });
}

/** Read a Pod's watch until `done` says so; every event is kept for assertions on the sequence. */
async function follow(
  c: Awaited<ReturnType<typeof kubeClient>>,
  name: string,
  done: (e: WatchEvent, seen: WatchEvent[]) => boolean,
  timeoutMs = 60_000,
): Promise<WatchEvent[]> {
  const w = await c.watch(`~/pods?watch=1&fieldSelector=metadata.name%3D${name}`);
  const seen: WatchEvent[] = [];
  const end = Date.now() + timeoutMs;
  try {
    for (;;) {
      const e = await w.next(Math.max(1, end - Date.now()));
      if (!e) throw new Error(`watch of ${name} ended; saw ${seen.map(describe).join(" | ")}`);
      seen.push(e);
      if (done(e, seen)) return seen;
    }
  } catch (err) {
    throw new Error(`${(err as Error).message}; saw ${seen.map(describe).join(" | ")}`);
  } finally {
    await w.close();
  }
}

const statusOf = (e: WatchEvent) => (e.object.status ?? {}) as Json;
const phase = (e: WatchEvent) => statusOf(e).phase;
const containers = (e: WatchEvent, key = "containerStatuses") => (statusOf(e)[key] ?? []) as Json[];
const state = (e: WatchEvent, name: string) =>
  [...containers(e, "initContainerStatuses"), ...containers(e)].find((s) => s.name === name)?.state as
    | Json
    | undefined;
const terminated = (e: WatchEvent, name: string) => state(e, name)?.terminated as Json | undefined;
function describe(e: WatchEvent): string {
  const cs = [...containers(e, "initContainerStatuses"), ...containers(e)].map((s) =>
    `${s.name}:${Object.keys((s.state ?? {}) as Json)[0]}`
  );
  return `${e.type} ${phase(e)} ${cs.join(",")}${e.object.metadata.deletionTimestamp ? " deleting" : ""}`;
}

dockerTest(
  "docker kubelet: init writes the claim, the worker reads it and the Secret file, exits 3",
  async () => {
    await withKubelet(async (k, c) => {
      const claim = `ws-${uniq()}`;
      assert.deepEqual(
        (await c.call("POST", "~/secrets", {
          metadata: { name: "sess" },
          stringData: { token: "s3cret" },
          immutable: true,
        })).status,
        201,
      );
      assert.deepEqual(
        (await c.call("POST", "~/persistentvolumeclaims", {
          metadata: { name: claim },
          spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
        })).status,
        201,
      );
      const mounts = [{ name: "work", mountPath: "/workspace", subPath: "workspace" }];
      const created = await c.call("POST", "~/pods?fieldValidation=Strict", {
        metadata: { name: "w1" },
        spec: {
          restartPolicy: "Never",
          securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000 },
          initContainers: [{
            name: "clone",
            image: BASE_IMAGE,
            command: [
              "sh",
              "-c",
              "echo cloned > /workspace/file && id -u > /workspace/uid && echo init-done",
            ],
            volumeMounts: mounts,
            securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
          }],
          containers: [{
            name: "worker",
            image: BASE_IMAGE,
            workingDir: "/workspace",
            command: ["sh", "-c"],
            args: [
              'cat file; cat uid; stat -L -c "mode=%a gid=%g" /run/lvmh/token; cat /run/lvmh/token; echo; ' +
              'echo "$GREETING $FROM_SECRET"; id -G; echo "the end" > /dev/termination-log; exit 3',
            ],
            env: [
              { name: "GREETING", value: "hello" },
              { name: "FROM_SECRET", valueFrom: { secretKeyRef: { name: "sess", key: "token" } } },
            ],
            volumeMounts: [...mounts, { name: "session", mountPath: "/run/lvmh", readOnly: true }],
            resources: { limits: { memory: "256Mi", cpu: "500m" } },
          }],
          volumes: [
            { name: "work", persistentVolumeClaim: { claimName: claim } },
            {
              name: "session",
              secret: { secretName: "sess", defaultMode: 0o400, items: [{ key: "token", path: "token" }] },
            },
          ],
        },
      });
      assert.deepEqual(created.status, 201, JSON.stringify(created.body));
      const seen = await follow(c, "w1", (e) => phase(e) === "Failed" || phase(e) === "Succeeded");
      const last = seen.at(-1)!;
      assert.deepEqual(phase(last), "Failed", seen.map(describe).join(" | "));
      const init = terminated(last, "clone")!;
      assert.deepEqual([init.exitCode, init.reason], [0, "Completed"]);
      const worker = terminated(last, "worker")!;
      assert.deepEqual([worker.exitCode, worker.reason, worker.message], [3, "Error", "the end\n"]);
      assert.ok(seen.some((e) => state(e, "clone")?.running), "the init container was seen running");
      assert.ok(
        seen.some((e) => phase(e) === "Running" && terminated(e, "clone")),
        "Running after the init ended",
      );
      assert.ok(
        seen.findIndex((e) => phase(e) === "Running") > seen.findIndex((e) => terminated(e, "clone")),
        "the worker starts only after the init container",
      );
      const initialized = ((statusOf(last).conditions ?? []) as Json[]).find((x) => x.type === "Initialized");
      assert.deepEqual(initialized?.status, "True");

      const logs = await c.text("~/pods/w1/log?container=worker");
      assert.deepEqual(logs.status, 200);
      const lines = logs.text.split("\n");
      assert.deepEqual(lines.slice(0, 5), ["cloned", "1000", "mode=440 gid=1000", "s3cret", "hello s3cret"]);
      assert.ok(lines[5].split(" ").includes("1000"), `the fsGroup is a supplementary group: ${lines[5]}`);
      assert.deepEqual((await c.text("~/pods/w1/log?container=clone")).text, "init-done\n");
      assert.deepEqual((await c.text("~/pods/w1/log?container=worker&tailLines=1")).text, "1000\n");

      const engine = testEngine();
      assert.ok(await engine.volumeExists(`lvmh-kube-pvc-${claim}`), "the claim is a Docker volume");
      // A finished Pod is deleted at once; the claim then goes, and its volume with it.
      assert.deepEqual((await c.call("DELETE", "~/pods/w1")).status, 200);
      assert.deepEqual((await c.call("DELETE", `~/persistentvolumeclaims/${claim}`)).status, 200);
      const end = Date.now() + 20_000;
      while (await engine.volumeExists(`lvmh-kube-pvc-${claim}`)) {
        if (Date.now() > end) throw new Error("the claim's volume was not removed");
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.deepEqual(k.list("persistentvolumeclaims"), []);
      assert.deepEqual(await engine.containerList({ "lvmh.kube.pod": "w1" }), []);
    });
  },
);

dockerTest("docker kubelet: a memory limit is real — OOMKilled with exit 137", async () => {
  await withKubelet(async (_k, c) => {
    await c.call("POST", "~/pods", {
      metadata: { name: "oom" },
      spec: {
        restartPolicy: "Never",
        containers: [{
          name: "hog",
          image: BASE_IMAGE,
          command: ["node", "-e", "const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1));"],
          resources: { limits: { memory: "64Mi" } },
        }],
      },
    });
    const seen = await follow(c, "oom", (e) => phase(e) === "Failed" || phase(e) === "Succeeded");
    const t = terminated(seen.at(-1)!, "hog")!;
    assert.deepEqual([phase(seen.at(-1)!), t.reason, t.exitCode], ["Failed", "OOMKilled", 137]);
  });
});

dockerTest("docker kubelet: delete sends SIGTERM — exit 143, then DELETED, containers gone", async () => {
  await withKubelet(async (_k, c) => {
    await c.call("POST", "~/pods", {
      metadata: { name: "long" },
      spec: {
        restartPolicy: "Never",
        terminationGracePeriodSeconds: 20,
        containers: [{
          name: "worker",
          image: BASE_IMAGE,
          command: [
            "sh",
            "-c",
            "trap 'echo got TERM; exit 143' TERM; echo ready; while :; do sleep 0.1; done",
          ],
        }],
      },
    });
    await follow(c, "long", (e) => phase(e) === "Running");
    const end = Date.now() + 20_000;
    while (!(await c.text("~/pods/long/log")).text.includes("ready")) {
      if (Date.now() > end) throw new Error("the worker never logged ready");
      await new Promise((r) => setTimeout(r, 100));
    }
    const rv = (await c.call("GET", "~/pods")).body.metadata.resourceVersion;
    const w = await c.watch(`~/pods?watch=1&resourceVersion=${rv}`);
    const del = await c.call("DELETE", "~/pods/long", { gracePeriodSeconds: 20 });
    assert.deepEqual(del.status, 200);
    assert.ok((del.body.metadata as Json).deletionTimestamp);
    const seen: WatchEvent[] = [];
    for (let e = await w.next(30_000); e; e = await w.next(30_000)) {
      seen.push(e);
      if (e.type === "DELETED") break;
    }
    await w.close();
    assert.deepEqual(seen.at(-1)?.type, "DELETED", seen.map(describe).join(" | "));
    assert.ok(seen[0].object.metadata.deletionTimestamp, "first the deletionTimestamp");
    const t = seen.map((e) => terminated(e, "worker")).find((x) => x)!;
    assert.deepEqual([t.exitCode, t.reason], [143, "Error"]);
    assert.deepEqual(await testEngine().containerList({ "lvmh.kube.pod": "long" }), []);
  });
});

dockerTest(
  "docker kubelet: a missing image is ErrImagePull then ImagePullBackOff; the Pod stays Pending",
  async () => {
    await withKubelet(async (_k, c) => {
      await c.call("POST", "~/pods", {
        metadata: { name: "noimg" },
        spec: { restartPolicy: "Never", containers: [{ name: "w", image: `lvmh-no-such-image:${uniq()}` }] },
      });
      const seen = await follow(
        c,
        "noimg",
        (e) => (state(e, "w")?.waiting as Json)?.reason === "ImagePullBackOff",
      );
      assert.ok(seen.some((e) => (state(e, "w")?.waiting as Json)?.reason === "ErrImagePull"));
      assert.deepEqual(phase(seen.at(-1)!), "Pending");
      const rv = (await c.call("GET", "~/pods")).body.metadata.resourceVersion;
      const w = await c.watch(`~/pods?watch=1&resourceVersion=${rv}`);
      assert.deepEqual((await c.call("DELETE", "~/pods/noimg")).status, 200);
      let e = await w.next(30_000);
      while (e && e.type !== "DELETED") e = await w.next(30_000);
      await w.close();
      assert.deepEqual(e?.type, "DELETED");
    });
  },
);
