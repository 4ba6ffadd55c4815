/**
 * REST shapes of spawning a session in a worker (Transport 2): the body, the 201 answer and a spawn job as
 * `GET /api/spawn/status` and `spawn_status` frames report it.
 */
import { z } from "zod";
import { AskSet } from "./shapes.ts";
import { BranchName, RepoPath } from "./rest_gitlab.ts";
import { BudgetBody } from "./rest_budgets.ts";

export const SpawnBody = z.object({
  repo: RepoPath,
  branch: BranchName.optional(),
  ask: AskSet.optional(),
  /** The spawned session's budget (`LVMH_SPAWN_BUDGET` without one). */
  budget: BudgetBody.optional(),
});
export type SpawnBody = z.infer<typeof SpawnBody>;

/** `POST /api/spawn`'s 201 answer. */
export interface SpawnResult {
  sessionId: string;
  jobId: string;
  containerId: string;
}

export type SpawnState = "queued" | "cloning" | "building" | "starting" | "running" | "failed" | "stopped";
/** One spawn job as `GET /api/spawn/status` and `spawn_status` frames report it. */
export interface SpawnJob {
  id: string;
  repo: string;
  branch: string | null;
  state: SpawnState;
  sessionId: string;
  containerId: string | null;
  error: string | null;
  createdAt: number;
  updatedAt: number;
}
