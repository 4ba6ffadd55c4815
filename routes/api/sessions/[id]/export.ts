import { ExportQuery, parseWith } from "../../../../lib/protocol.ts";
import { InvalidError, sessionNotFound } from "../../../../lib/errors.ts";
import { EXPORT_TYPES, exportFileName, exportStream } from "../../../../lib/search/export.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** The session as a Markdown, JSONL or HTML file to download (viewer), streamed page by page. */
export const handler: Handlers = {
  GET(ctx) {
    const query = parseWith(ExportQuery, Object.fromEntries(ctx.url.searchParams));
    if (!query.ok) throw new InvalidError(query.message);
    const id = ctx.params.id;
    const session = ctx.app.sessions.get(id);
    if (!session) throw sessionNotFound(id);
    const format = query.value.format;
    const name = exportFileName(session.title, format);
    const head = {
      id,
      title: session.title,
      cwd: session.cwd,
      repo: session.repo,
      model: session.model,
      startedAt: session.startedAt,
    };
    const body = exportStream(format, head, (after, limit) => ctx.app.store.eventRows(id, { after, limit }));
    return new Response(body, {
      headers: {
        "content-type": EXPORT_TYPES[format].type,
        "content-disposition": `attachment; filename="${name}"`,
        "cache-control": "no-store",
        "x-content-type-options": "nosniff",
      },
    });
  },
};
