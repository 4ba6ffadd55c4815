/** `lvmh tail`: a session's conversation, a page of it or from an event on, and `-f` to follow it live. */
import process from "node:process";
import { need, parse } from "./args.ts";
import type { Command } from "./command.ts";
import { usage } from "./errors.ts";
import { follow } from "./follow.ts";
import { api, enc } from "./http.ts";
import { type CliEvent, createRenderer } from "./render.ts";

/** The events route's page size (`EVENTS_PAGE_MAX`): a shorter page is the last. */
const PAGE = 1000;

export const tail: Command = async (cfg, args) => {
  const { values, positionals } = parse(args, {
    follow: { type: "boolean", short: "f" },
    from: { type: "string" },
    json: { type: "boolean" },
  });
  const [id] = need(positionals, 1, "a session id");
  let from: number | null = null;
  if (values.from !== undefined) {
    from = Number(values.from);
    if (!Number.isSafeInteger(from) || from < 0) {
      throw usage("--from takes a non-negative integer");
    }
  }
  const render = createRenderer((s) => process.stdout.write(s));
  const show = values.json ? (e: CliEvent) => process.stdout.write(JSON.stringify(e) + "\n") : render;
  const after = from === null ? null : Math.max(0, from - 1);
  if (values.follow) {
    return await follow(cfg, id, after === null ? "" : `?after=${after}`, show);
  }
  const events = `/api/sessions/${enc(id)}/events`;
  if (after === null) {
    for (
      const e of await api<CliEvent[]>(
        cfg,
        "GET",
        `${events}?before=${Number.MAX_SAFE_INTEGER}`,
      )
    ) show(e);
    return;
  }
  let cursor = after;
  while (true) {
    const page = await api<CliEvent[]>(
      cfg,
      "GET",
      `${events}?after=${cursor}&limit=${PAGE}`,
    );
    for (const e of page) show(e);
    if (page.length < PAGE) break;
    cursor = page[page.length - 1].seq;
  }
};
