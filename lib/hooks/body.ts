/** Reading inbound hook bodies with a hard size limit, before anything parses them. */
import { readText } from "../http.ts";
import { InvalidError } from "../errors.ts";

/** Inbound hook bodies beyond this are refused with 413. */
export const MAX_HOOK_BODY_BYTES = 1024 * 1024;

/**
 * The body as JSON, read as at most `maxBytes` of text.
 * @throws {HttpError} 413 when it is larger (declared or streamed); {InvalidError} (400) when it is not JSON.
 */
export async function readHookJson(req: Request, maxBytes = MAX_HOOK_BODY_BYTES): Promise<unknown> {
  const text = await readText(req, maxBytes);
  try {
    return JSON.parse(text);
  } catch {
    throw new InvalidError("body is not valid JSON");
  }
}
