/**
 * Attach to a container's stdin over a hijacked connection (`POST /containers/{id}/attach` with
 * `Upgrade: tcp`), which `fetch` cannot do: a raw unix socket, a hand-written HTTP/1.1 request, then the
 * socket is the container's stdin. Used to hand the clone helper its GitLab token without an env var, a
 * command-line argument or a file in an image layer.
 */
import { API_VERSION, checkName } from "./engine.ts";
import { errorFor, unreachable } from "./errors.ts";

const MAX_HEADER = 16 * 1024;

/** A container's stdin; `close()` half-closes so the process sees end-of-file. */
export interface StdinStream {
  write(data: Uint8Array): Promise<void>;
  close(): Promise<void>;
}

/**
 * Attach to the stdin of a created (not yet started) or running container made with `OpenStdin: true`.
 * Output is not attached (`stdout=0&stderr=0`), so nothing on this socket can fill up and block the process.
 * @throws {DockerUnreachableError} when the socket cannot be opened; {DockerError} by kind when the engine
 * refuses the upgrade; {TypeError} on an invalid id.
 */
export async function attachStdin(socketPath: string, id: string): Promise<StdinStream> {
  checkName(id, "container");
  const action = `Cannot attach to container "${id}"`;
  let conn: Deno.UnixConn;
  try {
    conn = await Deno.connect({ transport: "unix", path: socketPath });
  } catch (error) {
    throw unreachable(action, socketPath, error);
  }
  try {
    const request =
      `POST /${API_VERSION}/containers/${id}/attach?stream=1&stdin=1&stdout=0&stderr=0 HTTP/1.1\r\n` +
      "Host: docker\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: 0\r\n\r\n";
    await writeAll(conn, new TextEncoder().encode(request));
    const { status, body } = await readHead(conn);
    if (status !== 101 && status !== 200) throw errorFor(action, status, body);
  } catch (error) {
    conn.close();
    throw error;
  }
  let closed = false;
  return {
    write: (data) => writeAll(conn, data),
    async close() {
      if (closed) return;
      closed = true;
      try {
        await conn.closeWrite();
      } finally {
        conn.close();
      }
    },
  };
}

async function writeAll(conn: Deno.Conn, data: Uint8Array): Promise<void> {
  for (let at = 0; at < data.length;) at += await conn.write(data.subarray(at));
}

/** Read the response head byte by byte (nothing after it may be consumed: the stream belongs to the caller). */
async function readHead(conn: Deno.Conn): Promise<{ status: number; body: string }> {
  const bytes: number[] = [];
  const one = new Uint8Array(1);
  while (bytes.length < MAX_HEADER) {
    const n = await conn.read(one);
    if (n === null) break;
    bytes.push(one[0]);
    const len = bytes.length;
    if (
      len >= 4 && bytes[len - 4] === 13 && bytes[len - 3] === 10 && bytes[len - 2] === 13 &&
      bytes[len - 1] === 10
    ) {
      break;
    }
  }
  const head = new TextDecoder().decode(new Uint8Array(bytes));
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
  if (status === 101 || status === 200) return { status, body: "" };
  // An error answer: read its (small) body for the engine's message.
  const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
  const body = new Uint8Array(Math.min(length, MAX_HEADER));
  let got = 0;
  while (got < body.length) {
    const n = await conn.read(body.subarray(got));
    if (n === null) break;
    got += n;
  }
  return { status: status || 500, body: new TextDecoder().decode(body.subarray(0, got)) };
}
