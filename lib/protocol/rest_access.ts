/**
 * REST shapes of who may do what (Transport 2): named tokens, the web UI's sign-in, and the audit log that
 * records what each of them did.
 */
import { z } from "zod";
import { BOOTSTRAP_NAME, type Role, ROLES } from "../wire.ts";

/** A named token as `GET /api/tokens` lists it: never its value, never its hash. */
export interface TokenInfo {
  name: string;
  role: Role;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

/** One audit row, as `GET /api/audit` pages them. */
export interface AuditEntry {
  id: number;
  at: number;
  actor: string;
  role: Role | null;
  action: string;
  sessionId: string | null;
  detail: unknown;
}

/** A named token's name: never the bootstrap token's. */
export const TokenName = z.string().regex(
  /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/,
  "name: 1-64 letters, digits, '.', '_' or '-'",
).refine((n) => n !== BOOTSTRAP_NAME, { message: `"${BOOTSTRAP_NAME}" is the bootstrap token's name` });
export const RoleName = z.enum(ROLES);
/** `POST /api/tokens` (and `deno task token add`). */
export const TokenBody = z.object({ name: TokenName, role: RoleName });

/** `GET /api/audit`: a page of rows after the id `after`, oldest first. */
export const AuditQuery = z.object({
  after: z.coerce.number().int().nonnegative().default(0),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

/** `POST /login`: the daemon token, exchanged for the HttpOnly page cookie (web UI). */
export const LoginBody = z.object({ token: z.string().min(1, "token is required").max(1024) });
