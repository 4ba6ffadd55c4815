/**
 * The one place that turns domain errors into HTTP responses, plus body and JSON helpers for routes.
 */
import type { z } from "zod";
import { MAX_BODY_BYTES, parseWith } from "./protocol.ts";

/** An error that already knows its HTTP status; its message is safe to show the caller. */
export class HttpError extends Error {
  constructor(readonly status: number, message: string, readonly headers: Record<string, string> = {}) {
    super(message);
    this.name = "HttpError";
  }
}

/** A session that exists but has no live plugin socket. */
export class OfflineError extends Error {
  constructor(sessionId: string) {
    super(`Session "${sessionId}" is offline`);
    this.name = "OfflineError";
  }
}

/** A named thing that does not exist (session, job, container). */
export class NotFoundError extends Error {
  override name = "NotFoundError";
}

/** A dependency the daemon needs (Docker, GitLab) cannot be reached. */
export class UnavailableError extends Error {
  override name = "UnavailableError";
}

const SECURITY_HEADERS = { "x-content-type-options": "nosniff", "cache-control": "no-store" };

/** A JSON response with the project's default headers. */
export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...SECURITY_HEADERS, ...headers },
  });
}

/** Map any thrown value to `{"error": "…"}` with the right status; unknown errors are logged, not shown. */
export function errorResponse(error: unknown): Response {
  if (error instanceof HttpError) return json({ error: error.message }, error.status, error.headers);
  if (error instanceof OfflineError) return json({ error: error.message }, 409);
  if (error instanceof NotFoundError) return json({ error: error.message }, 404);
  if (error instanceof UnavailableError) return json({ error: error.message }, 503);
  console.error("lvmh: unhandled error in route:", error);
  return json({ error: "internal error" }, 500);
}

/**
 * Read a JSON body of at most `MAX_BODY_BYTES` and validate it against `schema`.
 * @throws {HttpError} 413 when too large, 415 on a wrong content type, 400 when not JSON or not valid.
 */
export async function readJson<T>(req: Request, schema: z.ZodType<T>, maxBytes = MAX_BODY_BYTES): Promise<T> {
  const declared = Number(req.headers.get("content-length") ?? "0");
  if (declared > maxBytes) throw new HttpError(413, `body is larger than ${maxBytes} bytes`);
  const type = req.headers.get("content-type") ?? "";
  const text = await readText(req, maxBytes);
  if (text.length > 0 && !type.toLowerCase().startsWith("application/json")) {
    throw new HttpError(415, "body must be application/json");
  }
  let raw: unknown = {};
  if (text.length > 0) {
    try {
      raw = JSON.parse(text);
    } catch {
      throw new HttpError(400, "body is not valid JSON");
    }
  }
  const parsed = parseWith(schema, raw);
  if (!parsed.ok) throw new HttpError(400, parsed.message);
  return parsed.value;
}

async function readText(req: Request, maxBytes: number): Promise<string> {
  if (!req.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of req.body) {
    size += chunk.byteLength;
    if (size > maxBytes) throw new HttpError(413, `body is larger than ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.byteLength;
  }
  return new TextDecoder().decode(all);
}
