/**
 * Find secrets in the lines a change adds, before they leave for GitLab. Input is git's unified diff (one
 * `diff --git` section per file, possibly several commits' worth from `git log -p`); only `+` lines inside
 * hunks are read, and each finding names the file and its line in the new version, so a person can look.
 * The patterns are the well-known token shapes (high precision), not entropy guesses: a refusal a person
 * can only override as an admin must be rare and obviously right.
 */

/** One suspected secret: where it is, and which kind of secret it looks like. The secret itself is not kept. */
export interface SecretFinding {
  file: string;
  /** Line number in the file's new version (1-based). */
  line: number;
  kind: string;
}

const PATTERNS: { kind: string; re: RegExp }[] = [
  {
    kind: "GitLab token",
    re: /\b(glpat|gldt|glrt|glptt|glcbt|glimt|glagent|glsoat|glffct)-[0-9A-Za-z_-]{20,}/,
  },
  { kind: "AWS access key", re: /\b(AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b/ },
  { kind: "private key", re: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/ },
  { kind: "GitHub token", re: /\b(ghp|gho|ghu|ghs|ghr)_[0-9A-Za-z]{36,}/ },
  { kind: "GitHub token", re: /\bgithub_pat_[0-9A-Za-z_]{22,}/ },
  { kind: "Slack token", re: /\bxox[abposr]-[0-9A-Za-z-]{10,}/ },
  {
    kind: "Slack webhook",
    re: /https:\/\/hooks\.slack\.com\/services\/T[0-9A-Za-z]+\/B[0-9A-Za-z]+\/[0-9A-Za-z]+/,
  },
  { kind: "Stripe key", re: /\b[sr]k_live_[0-9A-Za-z]{20,}/ },
  { kind: "Google API key", re: /\bAIza[0-9A-Za-z_-]{35}\b/ },
  { kind: "OpenAI key", re: /\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}/ },
  { kind: "Anthropic key", re: /\bsk-ant-(?:api|admin)\d{2}-[0-9A-Za-z_-]{80,}/ },
  { kind: "npm token", re: /\bnpm_[0-9A-Za-z]{36}\b/ },
  { kind: "PyPI token", re: /\bpypi-AgEIcHlwaS5vcmc[0-9A-Za-z_-]{50,}/ },
  { kind: "SendGrid key", re: /\bSG\.[0-9A-Za-z_-]{22}\.[0-9A-Za-z_-]{43}\b/ },
  { kind: "Twilio key", re: /\bSK[0-9a-f]{32}\b/ },
];

/** The kind of secret `text` contains, or null. */
export function secretKind(text: string): string | null {
  for (const { kind, re } of PATTERNS) if (re.test(text)) return kind;
  return null;
}

/**
 * Scan the added lines of a unified diff.
 * @param limit stop after this many findings (the answer only needs to show where to look).
 */
export function scanDiff(diff: string, limit = 50): SecretFinding[] {
  const findings: SecretFinding[] = [];
  let file: string | null = null;
  let line = 0;
  let inHunk = false;
  for (const raw of diff.split("\n")) {
    const text = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (text.startsWith("diff --git ") || text.startsWith("commit ")) {
      inHunk = false;
      if (text.startsWith("diff --git ")) file = pathOfDiffHeader(text);
      continue;
    }
    if (!inHunk) {
      if (text.startsWith("+++ ")) {
        const target = text.slice(4);
        if (target !== "/dev/null") file = unquote(target).replace(/^b\//, "");
        continue;
      }
      const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(text);
      if (hunk) [inHunk, line] = [true, Number(hunk[1])];
      continue;
    }
    const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(text);
    if (hunk) {
      line = Number(hunk[1]);
      continue;
    }
    if (text.startsWith("+")) {
      const kind = secretKind(text.slice(1));
      if (kind && file !== null) {
        findings.push({ file, line, kind });
        if (findings.length >= limit) return findings;
      }
      line++;
    } else if (text.startsWith(" ")) {
      line++;
    } else if (!text.startsWith("-") && !text.startsWith("\\")) {
      // Anything else (a blank line between `git log -p` entries, a new header) ends the hunk.
      inHunk = false;
    }
  }
  return findings;
}

/** `file:line (kind)`, for messages. */
export function describeFindings(findings: SecretFinding[]): string {
  return findings.map((f) => `${f.file}:${f.line} (${f.kind})`).join(", ");
}

/** The new path of `diff --git a/X b/Y` (the `+++` line, when present, refines it). */
function pathOfDiffHeader(header: string): string {
  const rest = header.slice("diff --git ".length);
  if (rest.startsWith('"')) {
    const parts = rest.match(/"(?:[^"\\]|\\.)*"|\S+/g) ?? [];
    return unquote(parts[parts.length - 1] ?? "").replace(/^b\//, "");
  }
  const at = rest.lastIndexOf(" b/");
  return at >= 0 ? rest.slice(at + 3) : rest;
}

/** git's C-style quoting of unusual paths (`"a\tb"`, octal escapes for non-ASCII bytes). */
function unquote(path: string): string {
  if (!path.startsWith('"') || !path.endsWith('"')) return path;
  const bytes: number[] = [];
  const body = path.slice(1, -1);
  const simple: Record<string, number> = { n: 10, t: 9, r: 13, '"': 34, "\\": 92, a: 7, b: 8, f: 12, v: 11 };
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c !== "\\") {
      bytes.push(...new TextEncoder().encode(c));
      continue;
    }
    const next = body[++i];
    if (/[0-7]/.test(next)) {
      bytes.push(parseInt(body.slice(i, i + 3), 8));
      i += 2;
    } else {
      bytes.push(simple[next] ?? next.charCodeAt(0));
    }
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}
