/** The daemon's REST API: one call, its answer as JSON, its refusal or unreachability as a `CliError`. */
import type { Config } from "./config.ts";
import { CliError } from "./errors.ts";
import { CLI_USER_AGENT } from "../../lib/wire.ts";

export const enc = encodeURIComponent;

/** The request headers: `extra` plus the bearer token, when there is one. */
export function headersFor(
  cfg: Config,
  extra: Record<string, string> = {},
): Record<string, string> {
  // The daemon labels prompts sent from here as the CLI's (a session's runs show where each was typed).
  const h: Record<string, string> = { "user-agent": `${CLI_USER_AGENT}1`, ...extra };
  if (cfg.token) h.authorization = `Bearer ${cfg.token}`;
  return h;
}

/** A failed fetch (exit code 3), named by what Node says caused it (`ECONNREFUSED`, …). */
export function unreachable(cfg: Config, error: unknown): CliError {
  const e = error as
    | { cause?: { code?: string; message?: string }; message?: string }
    | null
    | undefined;
  const cause = e?.cause?.code ?? e?.cause?.message ?? e?.message ??
    String(error);
  return new CliError(3, `cannot reach the daemon at ${cfg.url}: ${cause}`);
}

/** A non-2xx answer (exit code 1), with the daemon's `error` when it sent one. */
export async function refusal(res: Response): Promise<CliError> {
  const text = await res.text().catch(() => "");
  let message = `HTTP ${res.status}`;
  try {
    message = JSON.parse(text).error ?? message;
  } catch { /* not JSON */ }
  if (res.status === 401) message += " (set LVMH_TOKEN or run lvmh login)";
  return new CliError(1, message);
}

/**
 * One REST call; the parsed JSON answer, or a CliError (1 refused, 3 unreachable).
 * @typeParam T the route's answer, as `lib/protocol.ts` types it (not checked here)
 */
export async function api<T>(
  cfg: Config,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  let res: Response;
  try {
    res = await fetch(cfg.url + path, {
      method,
      headers: headersFor(
        cfg,
        body === undefined ? {} : { "content-type": "application/json" },
      ),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    throw unreachable(cfg, error);
  }
  if (!res.ok) throw await refusal(res);
  const text = await res.text();
  // Every route answers JSON; an empty body (none does today) reads as null.
  return text ? JSON.parse(text) : null as T;
}
