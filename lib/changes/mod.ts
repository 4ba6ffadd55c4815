/**
 * "What changed" in a working copy: the git script both runtimes run (`script.ts`), the answer built from its
 * output (`build.ts`) and the answer's shape and limits (`types.ts`). Runtime-neutral: no Deno or Node API,
 * no zod, so the plugin bundle uses it exactly as the daemon does.
 */
import { buildChanges, parseSections } from "./build.ts";
import type { ChangedFile, ChangeLimits, Changes, ChangeScope } from "./types.ts";

export * from "./types.ts";
export { CHANGES_SCRIPT, changesScriptArgs, HARDENED_GIT_ENV, newBoundary } from "./script.ts";
export { buildChanges, parseSections } from "./build.ts";

/**
 * The answer from the whole output of `CHANGES_SCRIPT` run with `boundary` (with `only`, that file alone).
 * @throws {Error} with git's own message when git failed.
 */
export function changesFromOutput(
  output: string,
  boundary: string,
  options: { scope: ChangeScope; limits: ChangeLimits; only?: string },
): Changes {
  return buildChanges(parseSections(output, boundary), options);
}

/**
 * One file of the answer (found by its path, or its path before a rename), with its whole diff within the
 * answer's byte budget (lockfiles included); null when that path did not change.
 */
export function changedFileFromOutput(
  output: string,
  boundary: string,
  options: { scope: ChangeScope; limits: ChangeLimits; path: string },
): ChangedFile | null {
  const answer = buildChanges(parseSections(output, boundary), { ...options, only: options.path });
  return answer.files[0] ?? null;
}
