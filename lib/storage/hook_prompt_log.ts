/**
 * Kept hook prompts behind one async interface: the daemon's SQLite file (`sqlite_hook_prompt_log.ts`, over
 * lib/hooks/hook_store.ts itself, so the file keeps one schema) and PostgreSQL shared by several replicas
 * (`pg_hook_prompt_log.ts`). Both pass one contract (tests/process/hook_push_contract_test.ts).
 *
 * A prompt is kept until its session's plugin answered it (`command_result` stored), it failed for good, or it
 * grew too old, exactly as lib/hooks/kept_prompts.ts keeps it today. With several replicas on one database,
 * each kept prompt is worked on (spawned, waited for, sent, retried) by one replica at a time: a replica
 * `claim`s it with a lease, renews the lease while it works, and ends with `release` (someone else may go on),
 * `answered` or `failed` (the row goes). Every write of a claimant names its lease, and a lease another
 * replica took over after it expired (the first claimant was SIGKILLed, or stalled past its lease) is
 * refused: the late claimant learns it lost the prompt and neither sends it nor records its failure, so a
 * prompt is sent by one replica and its failure is recorded once.
 */
import type { PendingPrompt, PendingSpawn } from "../hooks/hook_store.ts";

export type { PendingPrompt, PendingSpawn };

/** A delivery key is kept this long (GitLab retries within hours), as on SQLite today. */
export { DEDUPE_KEEP_MS } from "../hooks/hook_store.ts";

/** How long a claim lasts unless renewed: long enough for a send, short enough for a failover. */
export const PROMPT_LEASE_MS = 30_000;

/** One replica's hold on one kept prompt. The token changes at every claim, so an old hold never matches. */
export interface PromptLease {
  id: string;
  owner: string;
  token: string;
}

/** A claimed prompt, with the lease its claimant's writes must name. */
export interface ClaimedPrompt {
  prompt: PendingPrompt;
  lease: PromptLease;
}

/** Which prompts a claim may take: any, one by id, or one of a session's. */
export interface ClaimFilter {
  id?: string;
  sessionId?: string;
}

/** The kept hook prompts of a deployment, and the delivery keys that keep a retried hook from running twice. */
export interface HookPromptLog {
  /** Which database holds them. */
  readonly kind: "sqlite" | "postgres";
  /** Record a delivery key at `now`; false when it was recorded before (a replay, on any replica). */
  claimDelivery(source: string, key: string, now?: number): Promise<boolean>;
  /**
   * Claim a delivery key and keep a spawn's prompt in one transaction, so a kill leaves both or neither.
   * @returns the session id of the spawn this key asked for, and whether it was asked for before (then
   *   nothing is written, and the id is the earlier spawn's).
   */
  keepSpawn(
    source: string,
    key: string,
    p: PendingPrompt,
  ): Promise<{ sessionId: string; duplicate: boolean }>;
  /** Keep a prompt (replacing one with its id, lease included) until it is answered or given up. */
  keep(p: PendingPrompt): Promise<void>;
  /** Every prompt still kept, oldest first, whoever holds it. */
  prompts(): Promise<PendingPrompt[]>;
  /**
   * Take the oldest kept prompt matching `filter` that no live lease holds, for `leaseMs` (the database's
   * clock on PostgreSQL). Of replicas claiming at once, each prompt goes to exactly one.
   * @returns null when there is none to take.
   */
  claim(owner: string, leaseMs?: number, filter?: ClaimFilter): Promise<ClaimedPrompt | null>;
  /** Keep holding for `leaseMs` from now; false when the lease was lost (another replica claimed the prompt). */
  renew(lease: PromptLease, leaseMs?: number): Promise<boolean>;
  /** Let go, keeping the prompt for whoever claims it next; false when the lease was lost already. */
  release(lease: PromptLease): Promise<boolean>;
  /** The spawn ran: a later claim waits for the session instead of spawning again. False: lease lost. */
  markSpawned(lease: PromptLease): Promise<boolean>;
  /** First sent after the session's event `seq` (kept from the first send on). False: lease lost. */
  markSent(lease: PromptLease, seq: number): Promise<boolean>;
  /** Its answer is stored (or it is about to go to a plugin that never answers): the row goes. False: lost. */
  answered(lease: PromptLease): Promise<boolean>;
  /** It failed for good: the row goes; only a true result may record the failure (it is recorded once). */
  failed(lease: PromptLease): Promise<boolean>;
  /** Drop a prompt whoever holds it (too old, its spawn failed); true when this call removed it. */
  take(id: string): Promise<boolean>;
  /** Release what the log opened; unusable afterwards. */
  close(): Promise<void>;
}
