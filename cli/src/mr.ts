/**
 * `lvmh mr ID --title T [--description D] [--target B] [--draft]`: push a spawned session's work to its own
 * branch and open its merge request, or push new work and update it; `lvmh mr ID` alone shows it.
 */
import process from "node:process";
import { need, parse } from "./args.ts";
import type { Command } from "./command.ts";
import { api, enc } from "./http.ts";

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

export const mr: Command = async (cfg, args) => {
  const { values, positionals } = parse(args, {
    title: { type: "string" },
    description: { type: "string" },
    target: { type: "string" },
    draft: { type: "boolean" },
    "allow-secrets": { type: "boolean" },
    json: { type: "boolean" },
  });
  const [id] = need(positionals, 1, "a session id");
  const path = `/api/sessions/${enc(id)}/merge-request`;
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
