/**
 * The session's repository (group/project), read best effort from git's files: no `git` process, no throw.
 */
import fs from "node:fs";
import path from "node:path";

/** group/project from a git remote URL (scp-like, ssh:// or http(s)://), or null. */
export function repoFromRemote(url: string): string | null {
  const m = /^(?:[a-z+]+:\/\/(?:[^@/]+@)?[^/]+\/|[^@/\s]+@[^:/\s]+:)(.+?)(?:\.git)?\/?$/i
    .exec(url.trim());
  const repo = m?.[1].replace(/^\/+/, "");
  return repo &&
      /^[A-Za-z0-9_][A-Za-z0-9_.-]*(?:\/[A-Za-z0-9_][A-Za-z0-9_.-]*)+$/.test(
        repo,
      )
    ? repo
    : null;
}

/** Best effort: the `origin` remote of the git repository containing `cwd`, as group/project. */
export function repoFromGit(cwd: string): string | null {
  try {
    let dir = path.resolve(cwd);
    for (let i = 0; i < 30; i++) {
      const dotGit = path.join(dir, ".git");
      let stat = null;
      try {
        stat = fs.statSync(dotGit);
      } catch { /* not here */ }
      if (stat) {
        let gitDir = dotGit;
        if (stat.isFile()) {
          const ref = /^gitdir:\s*(.+)$/m.exec(fs.readFileSync(dotGit, "utf8"));
          if (!ref) return null;
          gitDir = path.resolve(dir, ref[1].trim());
          const common = path.join(gitDir, "commondir");
          if (fs.existsSync(common)) {
            gitDir = path.resolve(
              gitDir,
              fs.readFileSync(common, "utf8").trim(),
            );
          }
        }
        const config = fs.readFileSync(path.join(gitDir, "config"), "utf8");
        const section = /\[remote "origin"\]([^[]*)/.exec(config);
        const url = section && /^\s*url\s*=\s*(.+)$/m.exec(section[1]);
        return url ? repoFromRemote(url[1]) : null;
      }
      const up = path.dirname(dir);
      if (up === dir) return null;
      dir = up;
    }
  } catch { /* best effort */ }
  return null;
}
