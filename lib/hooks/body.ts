/** Reading inbound hook bodies with a hard size limit, before anything parses them. */
import { HttpError } from "../http.ts";
import { InvalidError } from "../errors.ts";

/** Inbound hook bodies beyond this are refused with 413. */
export const MAX_HOOK_BODY_BYTES = 1024 * 1024;

/**
 * The body as text, at most `maxBytes`.
 * @throws {HttpError} 413 when it is larger (declared or streamed); {InvalidError} (400) when it is not JSON.
 */
export async function readHookJson(req: Request, maxBytes = MAX_HOOK_BODY_BYTES): Promise<unknown> {
  if (Number(req.headers.get("content-length") ?? "0") > maxBytes) {
    throw new HttpError(413, `body is larger than ${maxBytes} bytes`);
  }
  const chunks: Uint8Array[] = [];
  let n = 0;
  if (req.body) {
    for await (const chunk of req.body) {
      n += chunk.length;
      if (n > maxBytes) throw new HttpError(413, `body is larger than ${maxBytes} bytes`);
      chunks.push(chunk);
    }
  }
  const all = new Uint8Array(n);
  let off = 0;
  for (const c of chunks) {
    all.set(c, off);
    off += c.length;
  }
  try {
    return JSON.parse(new TextDecoder().decode(all));
  } catch {
    throw new InvalidError("body is not valid JSON");
  }
}
