import assert from "node:assert/strict";
import { isIP } from "node:net";
import { API_VERSION, createEngine, type Transport } from "./engine.ts";
import {
  DockerBadRequestError,
  DockerBuildError,
  DockerConflictError,
  DockerError,
  DockerNotFoundError,
  DockerUnreachableError,
} from "./errors.ts";
import { waitFor } from "../testing/daemon.ts";
import { listenSilent } from "../testing/silent_server.ts";

/** A transport that records requests and answers from a script. */
function scripted(answer: (req: Request) => Response | Promise<Response>) {
  const seen: { host: string; method: string; path: string; body: string; type: string | null }[] = [];
  const transport: Transport = async (req) => {
    const url = new URL(req.url);
    seen.push({
      host: url.hostname,
      method: req.method,
      path: url.pathname + url.search,
      body: req.body ? await req.text() : "",
      type: req.headers.get("content-type"),
    });
    return answer(req);
  };
  return { engine: createEngine({ socketPath: "/test/docker.sock", transport }), seen };
}

const msg = (status: number, message: string) => Response.json({ message }, { status });

Deno.test("engine pins the API version and sends JSON bodies", async () => {
  const { engine, seen } = scripted(() => Response.json({ Id: "abc123", Warnings: [] }, { status: 201 }));
  const id = await engine.containerCreate("lvmh-sess-x", { Image: "img" });
  assert.equal(id, "abc123");
  assert.equal(seen[0].method, "POST");
  assert.equal(seen[0].path, `/${API_VERSION}/containers/create?name=lvmh-sess-x`);
  assert.equal(seen[0].type, "application/json");
  assert.deepEqual(JSON.parse(seen[0].body), { Image: "img" });
});

Deno.test("engine requests go to an address: Deno looks a host name up by DNS first", async () => {
  const { engine, seen } = scripted(() => Response.json([]));
  await engine.containerList({ "lvmh.managed": "true" });
  assert.equal(seen.length, 1);
  assert.notEqual(isIP(seen[0].host), 0, `host ${seen[0].host}`);
});

Deno.test("engine tells errors apart by status, not text", async (t) => {
  const cases: [number, new (...a: never[]) => DockerError][] = [
    [404, DockerNotFoundError],
    [409, DockerConflictError],
    [400, DockerBadRequestError],
  ];
  for (const [status, kind] of cases) {
    await t.step(`${status} → ${kind.name}`, async () => {
      const { engine } = scripted(() => msg(status, "some engine text"));
      const error = await engine.containerStart("abc").catch((e) => e);
      assert.ok(error instanceof kind, `${error}`);
      assert.equal(error.status, status);
      assert.equal(error.engineMessage, "some engine text");
      assert.match(
        error.message,
        new RegExp(`^Cannot start container "abc": daemon returned ${status}: some engine text$`),
      );
    });
  }
  await t.step("500 is a plain DockerError; a plain-text body is kept", async () => {
    const { engine } = scripted(() => new Response("client version 1.11 is too old", { status: 500 }));
    const error = await engine.containerList({}).catch((e) => e);
    assert.ok(error instanceof DockerError && !(error instanceof DockerNotFoundError));
    assert.equal(error.engineMessage, "client version 1.11 is too old");
  });
  await t.step("304 on start and stop is success", async () => {
    const { engine } = scripted(() => new Response(null, { status: 304 }));
    await engine.containerStart("abc");
    await engine.containerStop("abc", 1);
  });
});

Deno.test("engine reports an unreachable socket by name", async () => {
  const { engine } = scripted(() => {
    throw new TypeError("client error (Connect): No such file or directory");
  });
  const error = await engine.ping().catch((e) => e);
  assert.ok(error instanceof DockerUnreachableError);
  assert.equal(error.status, 0);
  assert.match(error.message, /unix:\/\/\/test\/docker\.sock/);
});

Deno.test("engine checks names before any request", async () => {
  const { engine, seen } = scripted(() => new Response(null, { status: 204 }));
  for (const bad of ["", "../x", "a/b", "-rf", "a b", "x?all=1"]) {
    await assert.rejects(() => engine.containerRemove(bad), TypeError);
    await assert.rejects(() => engine.volumeRemove(bad), TypeError);
  }
  await assert.rejects(() => engine.imageInspect("Bad Image"), TypeError);
  await assert.rejects(() => engine.imageInspect("a/../b"), TypeError);
  assert.equal(seen.length, 0);
});

Deno.test("engine lists by label with an encoded filter", async () => {
  const { engine, seen } = scripted(() => Response.json([]));
  await engine.containerList({ "lvmh.managed": "true", "lvmh.session": "s1" });
  const q = new URL("http://x" + seen[0].path).searchParams;
  assert.equal(q.get("all"), "1");
  assert.deepEqual(JSON.parse(q.get("filters")!), { label: ["lvmh.managed=true", "lvmh.session=s1"] });
});

Deno.test("engine.imageBuild() fails on an error line inside a 200 stream", async (t) => {
  await t.step("error line", async () => {
    const { engine, seen } = scripted(() =>
      new Response(
        '{"stream":"Step 1/7 : FROM node:22"}\r\n{"errorDetail":{"message":"pull access denied"},"error":"pull access denied"}\r\n',
      )
    );
    const error = await engine.imageBuild("tar", {
      tag: "w:latest",
      dockerfile: "d/f",
      buildargs: { BASE_IMAGE: "b" },
    })
      .catch((e) => e);
    assert.ok(error instanceof DockerBuildError);
    assert.match(error.message, /^Cannot build image "w:latest": pull access denied$/);
    const q = new URL("http://x" + seen[0].path).searchParams;
    assert.equal(q.get("t"), "w:latest");
    assert.deepEqual(JSON.parse(q.get("buildargs")!), { BASE_IMAGE: "b" });
    assert.equal(seen[0].type, "application/x-tar");
  });
  await t.step("success", async () => {
    const { engine } = scripted(() =>
      new Response(
        '{"stream":"Successfully built 1"}\n{"aux":{"ID":"sha256:abc"}}\n{"stream":"Successfully tagged w"}\n',
      )
    );
    const result = await engine.imageBuild("tar", { tag: "w:latest", dockerfile: "d/f" });
    assert.equal(result.imageId, "sha256:abc");
    assert.deepEqual(result.tail, ["Successfully built 1", "Successfully tagged w"]);
  });
});

Deno.test("engine.imageExists() maps 404 to false and keeps other errors", async () => {
  assert.equal(await scripted(() => msg(404, "no such image")).engine.imageExists("x:1"), false);
  assert.equal(await scripted(() => Response.json({ Id: "x" })).engine.imageExists("x:1"), true);
  await assert.rejects(() => scripted(() => msg(500, "boom")).engine.imageExists("x:1"), DockerError);
});

Deno.test("engine.close() cuts a call an engine that never answers holds, and every later call", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-engine-" });
  const socketPath = `${dir}/docker.sock`;
  await using hung = listenSilent({ transport: "unix", path: socketPath });
  try {
    const engine = createEngine({ socketPath });
    const held = engine.containerList({ "lvmh.managed": "1" }).then(() => "answered", (e) => e);
    await waitFor(() => hung.accepted() === 1, "the call's connection");
    engine.close();
    const error = await held; // at once: the call's own 30 s timeout would end it with another message
    assert.ok(error instanceof DockerUnreachableError, String(error));
    assert.match(error.message, /the client is closed/);
    await assert.rejects(() => engine.ping(), DockerUnreachableError);
    assert.equal(hung.accepted(), 1, "a call after close() does not connect");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
