/**
 * Readers for the Engine's two streaming formats: multiplexed container output (8-byte frame headers)
 * and the JSON-lines progress stream of `POST /build`.
 */

/** One frame of multiplexed output. */
export interface OutputFrame {
  stream: "stdin" | "stdout" | "stderr";
  data: Uint8Array<ArrayBuffer>;
}

const STREAMS = ["stdin", "stdout", "stderr"] as const;

/**
 * Demultiplex a non-TTY container output stream: each frame is `[stream, 0, 0, 0, size u32 BE]` + payload.
 * Frames may straddle chunk boundaries, so a carry-over buffer holds partial headers and payloads.
 * @throws {Error} when a header names an unknown stream (the body is not multiplexed, e.g. a TTY container).
 */
export async function* demux(body: ReadableStream<Uint8Array<ArrayBuffer>>): AsyncGenerator<OutputFrame> {
  let buf: Uint8Array<ArrayBuffer> = new Uint8Array(0);
  for await (const chunk of body) {
    buf = concat(buf, chunk);
    while (buf.length >= 8) {
      const kind = buf[0];
      if (kind > 2 || buf[1] !== 0 || buf[2] !== 0 || buf[3] !== 0) {
        throw new Error(`not a multiplexed stream: bad frame header byte ${kind}`);
      }
      const size = new DataView(buf.buffer, buf.byteOffset, 8).getUint32(4);
      if (buf.length < 8 + size) break;
      yield { stream: STREAMS[kind], data: buf.slice(8, 8 + size) };
      buf = buf.slice(8 + size);
    }
  }
  if (buf.length > 0) throw new Error(`multiplexed stream ended inside a frame (${buf.length} bytes left)`);
}

/** Collect a multiplexed stream into its stdout and stderr text. Throws as `demux` does. */
export async function collectOutput(
  body: ReadableStream<Uint8Array<ArrayBuffer>>,
): Promise<{ stdout: string; stderr: string }> {
  const out = { stdout: "", stderr: "" };
  const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  for await (const frame of demux(body)) {
    if (frame.stream === "stdin") continue;
    out[frame.stream] += decoders[frame.stream].decode(frame.data, { stream: true });
  }
  return out;
}

/** What a build stream said, read to its end. */
export interface BuildResult {
  /** The error line's message when the build failed (the HTTP status is 200 either way). */
  error: string | null;
  /** `sha256:…` from the `aux` line, when the engine sent one. */
  imageId: string | null;
  /** The last lines of `stream` output, for context in messages and logs. */
  tail: string[];
}

const TAIL_LINES = 20;

/**
 * Read a `POST /build` (or `/images/create`) JSON-lines stream to the end. A failed build still answers
 * 200, and the failure is only visible as an `error`/`errorDetail` line, so the whole stream is read.
 * @param onLine called with each line of build output (e.g. `Step 2/7 : RUN …`), for progress.
 */
export async function readBuildStream(
  body: ReadableStream<Uint8Array<ArrayBuffer>>,
  onLine?: (line: string) => void,
): Promise<BuildResult> {
  const result: BuildResult = { error: null, imageId: null, tail: [] };
  let pending = "";
  const handle = (line: string) => {
    if (!line.trim()) return;
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(line);
    } catch {
      return; // not JSON: ignore rather than fail a build that may well succeed
    }
    const detail = msg.errorDetail as { message?: unknown } | undefined;
    if (typeof msg.error === "string" || typeof detail?.message === "string") {
      result.error = String(detail?.message ?? msg.error).trim();
    }
    const aux = msg.aux as { ID?: unknown } | undefined;
    if (typeof aux?.ID === "string") result.imageId = aux.ID;
    if (typeof msg.stream === "string") {
      for (const text of msg.stream.split("\n")) {
        if (!text.trim()) continue;
        result.tail.push(text);
        if (result.tail.length > TAIL_LINES) result.tail.shift();
        onLine?.(text);
      }
    }
  };
  for await (const text of body.pipeThrough(new TextDecoderStream())) {
    pending += text;
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    lines.forEach(handle);
  }
  handle(pending);
  return result;
}

function concat(a: Uint8Array<ArrayBuffer>, b: Uint8Array<ArrayBuffer>): Uint8Array<ArrayBuffer> {
  if (a.length === 0) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}
