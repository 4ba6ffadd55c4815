/**
 * REST shapes of the GitLab link (Transport 2): project paths and branch names as lvmh accepts them (spawns
 * and merge requests both name them), the projects listed, the connection's status and the body that makes it.
 */
import { z } from "zod";

const segment = "[A-Za-z0-9_][A-Za-z0-9_.-]*";
/** A GitLab project path: `group/project` or `group/sub/project`; nothing a shell or URL could misread. */
export const RepoPath = z.string()
  .max(255, "repo path is too long")
  .regex(new RegExp(`^${segment}(?:/${segment}){1,19}$`), "repo must look like group/subgroup/project")
  .refine((s) => !s.split("/").some((part) => part.includes("..") || part.endsWith(".")), {
    message: "repo path segments must not contain '..' or end with '.'",
  });
/** A git branch name, restricted to the characters git allows without quoting. */
export const BranchName = z.string()
  .max(200, "branch name is too long")
  .regex(/^[A-Za-z0-9_][A-Za-z0-9_./-]*$/, "branch may hold letters, digits, '_', '.', '/', '-'")
  .refine((s) => !s.includes("..") && !s.includes("//") && !s.endsWith("/") && !s.endsWith(".lock"), {
    message: "branch is not a valid git ref name",
  });

/** A project as `GET /api/gitlab/repos` returns it. */
export interface GitlabRepo {
  path: string;
  name: string;
  namespace: string;
  lastActivityAt: string | null;
  webUrl: string;
  defaultBranch: string | null;
}

/** What `GET /api/gitlab/status` returns; never the token. */
export interface GitlabStatus {
  connected: boolean;
  baseUrl: string;
  username?: string;
}

export const GitlabConnectBody = z.object({
  token: z.string().trim().min(8, "token is too short").max(512).regex(
    /^[\x21-\x7e]+$/,
    "token has invalid characters",
  ),
});
