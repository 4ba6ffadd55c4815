/**
 * The one place that turns domain errors (`lib/errors.ts`) into HTTP responses, plus body and JSON helpers
 * for routes. `HttpError` is for the HTTP layer itself (auth, methods, body limits, upgrades), not the domain.
 */
import type { z } from "zod";
import { MAX_BODY_BYTES, parseWith } from "./protocol.ts";
import {
  ConflictError,
  ForbiddenError,
  InvalidError,
  NotFoundError,
  TooLargeError,
  UnavailableError,
  UpstreamError,
} from "./errors.ts";

/** An HTTP-layer error that already knows its status; its message is safe to show the caller. */
export class HttpError extends Error {
  constructor(readonly status: number, message: string, readonly headers: Record<string, string> = {}) {
    super(message);
    this.name = "HttpError";
  }
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
  const status = statusOf(error);
  if (status !== null) return json({ error: (error as Error).message }, status);
  console.error("lvmh: unhandled error in route:", error);
  return json({ error: "internal error" }, 500);
}

/** The status of a domain error kind, or null for anything else. */
function statusOf(error: unknown): number | null {
  if (error instanceof InvalidError) return 400;
  if (error instanceof ForbiddenError) return 403;
  if (error instanceof NotFoundError) return 404;
  if (error instanceof ConflictError) return 409;
  if (error instanceof TooLargeError) return 413;
  if (error instanceof UpstreamError) return 502;
  if (error instanceof UnavailableError) return 503;
  return null;
}

/**
 * Read a JSON body of at most `MAX_BODY_BYTES` and validate it against `schema`.
 * @throws {HttpError} 413 when too large, 415 on a wrong content type, 400 when not JSON or not valid.
 */
export async function readJson<T>(req: Request, schema: z.ZodType<T>, maxBytes = MAX_BODY_BYTES): Promise<T> {
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
      throw new InvalidError("body is not valid JSON");
    }
  }
  const parsed = parseWith(schema, raw);
  if (!parsed.ok) throw new InvalidError(parsed.message);
  return parsed.value;
}

/**
 * Read a body as UTF-8 text, refusing it as soon as it is known to be over `maxBytes` (declared or streamed).
 * @throws {HttpError} 413 when too large.
 */
export async function readText(req: Request, maxBytes: number): Promise<string> {
  const declared = Number(req.headers.get("content-length") ?? "0");
  if (declared > maxBytes) throw new HttpError(413, `body is larger than ${maxBytes} bytes`);
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
