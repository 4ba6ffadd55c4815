/**
 * GitLab webhook payloads lvmh acts on, parsed once: a note (comment) on a merge request or issue (a command
 * when it starts with `/lvmh `, else only news for a followed merge request), a pipeline, and a merge request
 * event. Shapes follow GitLab's documented "Note Hook", "Pipeline Hook" and "Merge Request Hook" payloads;
 * fields lvmh does not use are ignored.
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
    sha: z.string().optional(),
    status: z.string(),
    url: z.string().optional(),
  }),
  builds: z.array(z.looseObject({ name: z.string(), status: z.string(), stage: z.string().optional() }))
    .default([]),
  // A merge request pipeline runs on `refs/merge-requests/:iid/head`: the payload names its source branch.
  merge_request: z.looseObject({ iid: z.number(), source_branch: z.string() }).nullish(),
});

const MergeRequestHook = z.looseObject({
  object_kind: z.literal("merge_request"),
  project: Project,
  object_attributes: z.looseObject({
    iid: z.number(),
    source_branch: z.string(),
    state: z.string().optional(),
    action: z.string().optional(),
  }),
});

/** What a GitLab event asks of lvmh. */
export type GitlabAction =
  | {
    kind: "note";
    repo: string;
    /** The merge request's source branch; null for an issue comment. */
    branch: string | null;
    /** The merge request's iid; null for an issue comment. */
    iid: number | null;
    /** What follows `/lvmh`; null for a plain comment (only news for a followed merge request). */
    text: string | null;
    author: string;
    url: string | null;
  }
  | {
    kind: "pipeline";
    repo: string;
    branch: string;
    id: number;
    /** GitLab's status: `failed`, `success`, `running`, … */
    status: string;
    failedJobs: string[];
    url: string | null;
  }
  | { kind: "merge_request"; repo: string; branch: string; iid: number; state: string | null };

/** The marker a comment must start with. */
export const COMMAND = "/lvmh";

/**
 * Read one GitLab delivery. Null for events lvmh ignores (other kinds, bad shapes, empty `/lvmh` commands).
 */
export function parseGitlab(event: string | null, payload: unknown): GitlabAction | null {
  if (event === "Note Hook") {
    const p = NoteHook.safeParse(payload);
    if (!p.success) return null;
    const note = p.data.object_attributes.note.trimStart();
    const command = note.startsWith(COMMAND + " ") || note.startsWith(COMMAND + "\n");
    const text = command ? note.slice(COMMAND.length).trim() : null;
    const mr = p.data.object_attributes.noteable_type === "MergeRequest" ? p.data.merge_request : undefined;
    if (!text && !mr) return null;
    return {
      kind: "note",
      repo: p.data.project.path_with_namespace,
      branch: mr?.source_branch ?? null,
      iid: mr?.iid ?? null,
      text: text || null,
      author: p.data.user.username,
      url: p.data.object_attributes.url ?? null,
    };
  }
  if (event === "Pipeline Hook") {
    const p = PipelineHook.safeParse(payload);
    if (!p.success) return null;
    return {
      kind: "pipeline",
      repo: p.data.project.path_with_namespace,
      branch: p.data.merge_request?.source_branch ?? p.data.object_attributes.ref,
      id: p.data.object_attributes.id,
      status: p.data.object_attributes.status,
      failedJobs: p.data.builds.filter((b) => b.status === "failed").map((b) => b.name),
      url: p.data.object_attributes.url ?? null,
    };
  }
  if (event === "Merge Request Hook") {
    const p = MergeRequestHook.safeParse(payload);
    if (!p.success) return null;
    return {
      kind: "merge_request",
      repo: p.data.project.path_with_namespace,
      branch: p.data.object_attributes.source_branch,
      iid: p.data.object_attributes.iid,
      state: p.data.object_attributes.state ?? null,
    };
  }
  return null;
}

/** The follow-up a session gets for a `/lvmh` comment or a failed pipeline. */
export function promptFor(
  action: Extract<GitlabAction, { kind: "note" }> | Extract<GitlabAction, { kind: "pipeline" }>,
): string {
  if (action.kind === "note") {
    const where = action.url ? ` (${action.url})` : "";
    return `GitLab comment from @${action.author}${where}:\n\n${action.text ?? ""}`;
  }
  const jobs = action.failedJobs.length ? action.failedJobs.join(", ") : "(no job names reported)";
  const link = action.url ? `\n${action.url}` : "";
  return `The GitLab pipeline on ${action.branch} failed. Failed jobs: ${jobs}.${link}\n` +
    "Look at why and fix it.";
}
