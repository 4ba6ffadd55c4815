/**
 * Git's raw outputs (the sections `CHANGES_SCRIPT` prints) into the answer of "what changed", under its
 * limits: a file's diff over `fileBytes` or `fileLines` is cut, binary files and lockfiles come collapsed with
 * counts only, and past `totalBytes` the remaining files come with counts only. Nothing is left out silently:
 * each of those is marked. Runtime-neutral (the plugin bundle uses it as the daemon does).
 */
import {
  type ChangeCommit,
  type ChangedFile,
  type ChangeLimits,
  type Changes,
  type ChangeScope,
  type ChangeStatus,
  isLockfile,
  MAX_AUTHOR,
  MAX_COMMITS,
  MAX_TITLE,
} from "./types.ts";

/** One section of the script's output: git's exit code and its stdout. */
export interface Section {
  rc: number;
  body: string;
}

/**
 * Split the script's output on its boundary.
 * @throws {Error} when the output holds no section at all (the script did not run).
 */
export function parseSections(text: string, boundary: string): Map<string, Section> {
  const marker = `\n${boundary} `;
  const sections = new Map<string, Section>();
  let at = text.indexOf(marker);
  if (at < 0) throw new Error(`git produced no output: ${text.slice(-500).trim() || "(empty)"}`);
  while (at >= 0) {
    const lineEnd = text.indexOf("\n", at + marker.length);
    const header = text.slice(at + marker.length, lineEnd < 0 ? text.length : lineEnd).split(" ");
    const next = lineEnd < 0 ? -1 : text.indexOf(marker, lineEnd);
    const body = lineEnd < 0 ? "" : text.slice(lineEnd + 1, next < 0 ? text.length : next);
    sections.set(header[0], { rc: Number(header[1]), body });
    at = next;
  }
  return sections;
}

export interface BuildOptions {
  scope: ChangeScope;
  limits: ChangeLimits;
  /** Only this file (by its path or its path before a rename): lockfiles are not collapsed, no line limit. */
  only?: string;
}

/**
 * The answer from the script's sections.
 * @throws {Error} with git's own message when one of its commands failed.
 */
export function buildChanges(sections: Map<string, Section>, options: BuildOptions): Changes {
  const empty: Changes = {
    scope: options.scope,
    base: null,
    head: null,
    branch: null,
    stats: { files: 0, additions: 0, deletions: 0 },
    files: [],
    commits: [],
  };
  if (sections.has("norepo")) return empty;
  const err = sections.get("err")?.body.trim() ?? "";
  for (const name of ["meta", "numstat", "status", "patch"]) {
    const s = sections.get(name);
    if (!s) throw new Error(`git stopped before its ${name} output${err ? `: ${lastLines(err)}` : ""}`);
    if (s.rc !== 0) throw new Error(`git ${name} failed (exit code ${s.rc}): ${lastLines(err)}`);
  }
  const [head, branch, baseSha, baseBranch] = sections.get("meta")!.body.split("\n");
  const answer: Changes = {
    ...empty,
    base: baseSha ? { branch: baseBranch || "HEAD", sha: baseSha } : null,
    head: head || null,
    branch: branch || null,
  };
  const log = sections.get("log");
  if (log && log.rc !== 0) throw new Error(`git log failed (exit code ${log.rc}): ${lastLines(err)}`);
  if (log) {
    const commits = parseLog(log.body);
    if (commits.length > MAX_COMMITS) answer.truncated = true;
    answer.commits = newestWithin(commits.slice(-MAX_COMMITS), options.limits.totalBytes / 4);
    if (answer.commits.length < commits.length) answer.truncated = true;
  }
  const entries = zipEntries(
    parseNumstat(sections.get("numstat")!.body),
    parseNameStatus(sections.get("status")!.body),
  );
  const patches = splitPatch(sections.get("patch")!.body);
  // The three diffs ran with the same options on the same index, so git lists the files in the same order.
  const aligned = patches.length === entries.length;
  for (const e of entries) {
    answer.stats.files++;
    answer.stats.additions += e.additions;
    answer.stats.deletions += e.deletions;
  }
  const only = options.only;
  const limits = only === undefined
    ? options.limits
    : { ...options.limits, fileBytes: options.limits.totalBytes, fileLines: Infinity };
  // Every file's counts always fit: the budget for diffs is what remains once they are all counted.
  const files: { file: ChangedFile; patch?: string }[] = [];
  entries.forEach((e, i) => {
    if (only !== undefined && e.path !== only && e.oldPath !== only) return;
    const file: ChangedFile = {
      path: e.path,
      ...(e.oldPath !== undefined ? { oldPath: e.oldPath } : {}),
      status: e.status,
      binary: e.binary,
      additions: e.additions,
      deletions: e.deletions,
    };
    if (e.binary || (only === undefined && isLockfile(e.path))) file.collapsed = true;
    else if (!aligned) file.truncated = true;
    files.push({ file, patch: aligned ? patches[i] : undefined });
    answer.files.push(file);
  });
  // Room for `"truncated":true` on the answer and on every file that may need it.
  let used = utf8Length(JSON.stringify(answer)) + 20 * (files.length + 1);
  // So many files that even their counts overflow the budget (a plugin's frame): the last ones are left out
  // of the list (`stats` still counts them) and the answer says it is truncated.
  while (used > limits.totalBytes && answer.files.length) {
    const last = answer.files.pop()!;
    files.pop();
    used -= utf8Length(JSON.stringify(last)) + 21;
    answer.truncated = true;
  }
  let full = false;
  for (const { file, patch } of files) {
    if (file.collapsed || file.truncated || patch === undefined) continue;
    if (full) {
      file.truncated = true;
      continue;
    }
    // Over the blob limit git calls a text file binary in the patch; numstat counted its lines.
    const hunk = patch.indexOf("\n@@");
    if (/^Binary files .* differ$/m.test(hunk < 0 ? patch : patch.slice(0, hunk))) {
      file.truncated = true;
      continue;
    }
    const cut = cutDiff(patch, limits);
    const size = utf8Length(JSON.stringify(cut.text)) + 8;
    if (used + size > limits.totalBytes) {
      file.truncated = true;
      answer.truncated = true;
      full = true;
      continue;
    }
    used += size;
    file.diff = cut.text;
    if (cut.truncated) file.truncated = true;
  }
  if (!aligned && entries.length) answer.truncated = true;
  return answer;
}

interface Entry {
  path: string;
  oldPath?: string;
  status: ChangeStatus;
  binary: boolean;
  additions: number;
  deletions: number;
}

interface Count {
  binary: boolean;
  additions: number;
  deletions: number;
  path: string;
  oldPath?: string;
}

/** `git diff --numstat -z`: `A\tD\tpath\0`, or `A\tD\t\0old\0new\0` for a rename; `-\t-` for binary. */
export function parseNumstat(body: string): Count[] {
  const parts = body.split("\0");
  const out: Count[] = [];
  for (let i = 0; i < parts.length; i++) {
    const m = /^(-|\d+)\t(-|\d+)\t([\s\S]*)$/.exec(parts[i]);
    if (!m) continue;
    const binary = m[1] === "-";
    const count: Count = {
      binary,
      additions: binary ? 0 : Number(m[1]),
      deletions: binary ? 0 : Number(m[2]),
      path: m[3],
    };
    if (m[3] === "") {
      count.oldPath = parts[++i];
      count.path = parts[++i];
    }
    out.push(count);
  }
  return out;
}

/** `git diff --name-status -z`: `X\0path\0`, or `R100\0old\0new\0`. */
export function parseNameStatus(body: string): { status: ChangeStatus; path: string; oldPath?: string }[] {
  const parts = body.split("\0");
  const out: { status: ChangeStatus; path: string; oldPath?: string }[] = [];
  for (let i = 0; i + 1 < parts.length; i++) {
    const code = parts[i][0];
    if (!code) continue;
    if (code === "R" || code === "C") {
      const oldPath = parts[++i], path = parts[++i];
      out.push(code === "R" ? { status: "renamed", path, oldPath } : { status: "added", path });
    } else {
      const path = parts[++i];
      out.push({ status: code === "A" ? "added" : code === "D" ? "deleted" : "modified", path });
    }
  }
  return out;
}

function zipEntries(counts: Count[], statuses: ReturnType<typeof parseNameStatus>): Entry[] {
  if (counts.length !== statuses.length) {
    throw new Error(`git listed ${counts.length} files in numstat but ${statuses.length} in name-status`);
  }
  return statuses.map((s, i) => {
    const c = counts[i];
    if (c.path !== s.path) throw new Error(`git listed "${c.path}" and "${s.path}" in the same place`);
    return {
      ...s,
      binary: c.binary,
      additions: c.additions,
      deletions: c.deletions,
    };
  });
}

/** A whole patch into one text per file (each starts with `diff --git `, never inside a hunk). */
export function splitPatch(patch: string): string[] {
  const starts: number[] = [];
  if (patch.startsWith("diff --git ")) starts.push(0);
  for (let at = patch.indexOf("\ndiff --git "); at >= 0; at = patch.indexOf("\ndiff --git ", at + 1)) {
    starts.push(at + 1);
  }
  return starts.map((s, i) => patch.slice(s, i + 1 < starts.length ? starts[i + 1] : patch.length));
}

/** A file's diff within the limits, cut after a whole line. */
export function cutDiff(text: string, limits: ChangeLimits): { text: string; truncated: boolean } {
  let bytes = 0, lines = 0, lineStart = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c < 0xdc00 ? (i++, 4) : 3;
    if (bytes > limits.fileBytes) return { text: text.slice(0, lineStart), truncated: true };
    if (c === 10) {
      if (++lines > limits.fileLines) return { text: text.slice(0, lineStart), truncated: true };
      lineStart = i + 1;
    }
  }
  if (lineStart < text.length && lines + 1 > limits.fileLines) {
    return { text: text.slice(0, lineStart), truncated: true };
  }
  return { text, truncated: false };
}

/** The newest commits whose JSON fits in `bytes` (oldest first, as given). */
function newestWithin(commits: ChangeCommit[], bytes: number): ChangeCommit[] {
  let used = 2, from = commits.length;
  while (from > 0) {
    const size = utf8Length(JSON.stringify(commits[from - 1])) + 1;
    if (used + size > bytes) break;
    used += size;
    from--;
  }
  return commits.slice(from);
}

/** `git log -z --format=%H%x00%an%x00%at%x00%s`: four NUL-separated fields per commit. */
export function parseLog(body: string): ChangeCommit[] {
  const parts = body.split("\0");
  const out: ChangeCommit[] = [];
  for (let i = 0; i + 3 < parts.length; i += 4) {
    const sha = parts[i].replace(/^\n/, "");
    if (!/^[0-9a-f]{40,64}$/.test(sha)) break;
    // Cut to the protocol's bounds (lib/protocol/plugin.ts): a plugin's answer over one would be refused.
    out.push({
      sha,
      author: parts[i + 1].slice(0, MAX_AUTHOR),
      at: (Number(parts[i + 2]) || 0) * 1000,
      title: parts[i + 3].slice(0, MAX_TITLE),
    });
  }
  return out;
}

/** UTF-8 length of a string without encoding it. */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n++;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c < 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

function lastLines(text: string, n = 3): string {
  return text.trim().split("\n").slice(-n).join(" / ").slice(0, 1000) || "(no message)";
}
