/**
 * Wire types the browser works with: those of `lib/protocol.ts` it re-exports, the few answers only the UI
 * reads, and the event type inferred from the protocol's schemas so nothing is written twice.
 */
import type { AgentEvent, StoredEvent } from "../lib/protocol.ts";

export type {
  AttemptRow,
  Endpoint,
  EndpointRecord,
  GitlabRepo,
  GitlabStatus,
  SpawnResult,
} from "../lib/protocol.ts";

/**
 * An event as REST and `/ws` deliver it: the plugin's event after the daemon parsed it with `AgentEvent`
 * (defaults applied, unknown fields kept). Its `type` is a closed union, so reducers can switch exhaustively.
 */
export type UiEvent = AgentEvent;
/** The type names of `UiEvent`. */
export type UiEventType = UiEvent["type"];

/**
 * View stored events as `UiEvent`s. The store only holds frames that passed `AgentEvent`, so this is the one
 * place the loose `StoredEvent` shape of the server is narrowed; it copies nothing.
 */
export function asUiEvents(events: readonly StoredEvent[]): UiEvent[] {
  return events as unknown as UiEvent[];
}

/** One row of `GET /api/audit`, and one named token of `GET /api/tokens` (never its value or hash). */
export type { AuditEntry as AuditRow, TokenInfo as TokenRow } from "../lib/protocol.ts";
