/**
 * `lvmh mr ID --title T [--description D] [--target B] [--draft]`: push a spawned session's work to its own
 * branch and open its merge request, or push new work and update it; `lvmh mr ID` alone shows it;
 * `--comments` lists its review comments, `--send IDS [--note N]` sends the picked ones to the agent.
 */
import process from "node:process";
import { need, parse } from "./args.ts";
import type { Command } from "./command.ts";
import { api, enc } from "./http.ts";
import { usage } from "./errors.ts";

/** The fields both answers share (`POST` wraps them in `mergeRequest`). */
interface MergeRequestShown {
  iid: number;
  webUrl: string;
  state: string;
  sourceBranch: string;
  targetBranch: string;
  sha: string;
  pipeline?: { status: string } | null;
}

/** A review comment as `GET .../merge-request/comments` lists it. */
interface Comment {
  id: number;
  author: string;
  body: string;
  createdAt: string;
  path?: string;
  line?: number;
}

export const mr: Command = async (cfg, args) => {
  const { values, positionals } = parse(args, {
    title: { type: "string" },
    description: { type: "string" },
    target: { type: "string" },
    draft: { type: "boolean" },
    "allow-secrets": { type: "boolean" },
    comments: { type: "boolean" },
    send: { type: "string" },
    note: { type: "string" },
    json: { type: "boolean" },
  });
  const [id] = need(positionals, 1, "a session id");
  const path = `/api/sessions/${enc(id)}/merge-request`;
  if (values.send !== undefined) {
    const ids = values.send.split(",").map((s) => Number(s.trim()));
    if (!ids.length || ids.some((n) => !Number.isInteger(n) || n <= 0)) {
      throw usage(
        `--send takes comment ids separated by commas, not "${values.send}"`,
      );
    }
    const body = {
      ids,
      ...(values.note === undefined ? {} : { note: values.note }),
    };
    const sent = await api<{ ok: true; promptId: string }>(
      cfg,
      "POST",
      `${path}/comments/send`,
      body,
    );
    return void process.stdout.write(
      values.json ? JSON.stringify(sent) + "\n" : `sent ${sent.promptId}\n`,
    );
  }
  if (values.comments) {
    const { comments } = await api<{ comments: Comment[] }>(
      cfg,
      "GET",
      `${path}/comments`,
    );
    if (values.json) {
      return void process.stdout.write(JSON.stringify(comments) + "\n");
    }
    for (const c of comments) {
      const where = c.path === undefined
        ? ""
        : ` ${printable(c.path)}${c.line === undefined ? "" : `:${c.line}`}`;
      // A comment is someone else's text: its lines are indented so none passes for a header line.
      const body = c.body.split("\n").map((l) => `    ${printable(l)}`)
        .join("\n");
      process.stdout.write(
        `#${c.id} @${printable(c.author)}${where} ${printable(c.createdAt)}\n${body}\n`,
      );
    }
    return;
  }
  let shown: MergeRequestShown;
  if (values.title === undefined) {
    shown = await api<MergeRequestShown>(cfg, "GET", path);
  } else {
    const body = {
      title: values.title,
      ...(values.description === undefined ? {} : { description: values.description }),
      ...(values.target === undefined ? {} : { targetBranch: values.target }),
      ...(values.draft ? { draft: true } : {}),
      ...(values["allow-secrets"] ? { allowSecrets: true } : {}),
    };
    shown = (await api<{ mergeRequest: MergeRequestShown }>(cfg, "POST", path, body))
      .mergeRequest;
  }
  if (values.json) {
    return void process.stdout.write(JSON.stringify(shown) + "\n");
  }
  const pipeline = shown.pipeline ? ` · pipeline ${shown.pipeline.status}` : "";
  process.stdout.write(
    `!${shown.iid} ${shown.state}${pipeline}: ${shown.sourceBranch} → ${shown.targetBranch} at ` +
      `${shown.sha.slice(0, 10)}\n${shown.webUrl}\n`,
  );
};

/** `text` without control characters (a terminal escape in a comment stays inert), tabs kept. */
function printable(text: string): string {
  return [...text].filter((ch) => ch === "\t" || (ch >= " " && ch !== "\x7f"))
    .join("");
}
