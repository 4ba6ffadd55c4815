/**
 * GitLab webhook payloads lvmh acts on, parsed once: a note (comment) on a merge request or issue that starts
 * with `/lvmh `, and a failed pipeline. Shapes follow GitLab's documented "Note Hook" and "Pipeline Hook"
 * payloads; fields lvmh does not use are ignored.
 */
import { z } from "zod";

const Project = z.looseObject({ path_with_namespace: z.string(), web_url: z.string().optional() });

const NoteHook = z.looseObject({
  object_kind: z.literal("note"),
  user: z.looseObject({ username: z.string() }),
  project: Project,
  object_attributes: z.looseObject({
    note: z.string(),
    noteable_type: z.string(),
    url: z.string().optional(),
  }),
  merge_request: z.looseObject({ iid: z.number(), source_branch: z.string() }).optional(),
  issue: z.looseObject({ iid: z.number() }).optional(),
});

const PipelineHook = z.looseObject({
  object_kind: z.literal("pipeline"),
  project: Project,
  object_attributes: z.looseObject({
    id: z.number(),
    ref: z.string(),
    status: z.string(),
    url: z.string().optional(),
  }),
  builds: z.array(z.looseObject({ name: z.string(), status: z.string(), stage: z.string().optional() }))
    .default([]),
});

/** What a GitLab event asks of lvmh. */
export type GitlabAction =
  | {
    kind: "note";
    repo: string;
    /** The merge request's source branch; null for an issue comment. */
    branch: string | null;
    text: string;
    author: string;
    url: string | null;
  }
  | { kind: "pipeline"; repo: string; branch: string; failedJobs: string[]; url: string | null };

/** The marker a comment must start with. */
export const COMMAND = "/lvmh";

/**
 * Read one GitLab delivery. Null for events lvmh ignores (other kinds, notes without the command, pipelines
 * that did not fail).
 */
export function parseGitlab(event: string | null, payload: unknown): GitlabAction | null {
  if (event === "Note Hook") {
    const p = NoteHook.safeParse(payload);
    if (!p.success) return null;
    const note = p.data.object_attributes.note.trimStart();
    if (!note.startsWith(COMMAND + " ") && !note.startsWith(COMMAND + "\n")) return null;
    const text = note.slice(COMMAND.length).trim();
    if (!text) return null;
    const mr = p.data.object_attributes.noteable_type === "MergeRequest" ? p.data.merge_request : undefined;
    return {
      kind: "note",
      repo: p.data.project.path_with_namespace,
      branch: mr?.source_branch ?? null,
      text,
      author: p.data.user.username,
      url: p.data.object_attributes.url ?? null,
    };
  }
  if (event === "Pipeline Hook") {
    const p = PipelineHook.safeParse(payload);
    if (!p.success || p.data.object_attributes.status !== "failed") return null;
    return {
      kind: "pipeline",
      repo: p.data.project.path_with_namespace,
      branch: p.data.object_attributes.ref,
      failedJobs: p.data.builds.filter((b) => b.status === "failed").map((b) => b.name),
      url: p.data.object_attributes.url ?? null,
    };
  }
  return null;
}

/** The follow-up a session gets for an action. */
export function promptFor(action: GitlabAction): string {
  if (action.kind === "note") {
    const where = action.url ? ` (${action.url})` : "";
    return `GitLab comment from @${action.author}${where}:\n\n${action.text}`;
  }
  const jobs = action.failedJobs.length ? action.failedJobs.join(", ") : "(no job names reported)";
  const link = action.url ? `\n${action.url}` : "";
  return `The GitLab pipeline on ${action.branch} failed. Failed jobs: ${jobs}.${link}\n` +
    "Look at why and fix it.";
}
