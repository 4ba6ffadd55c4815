/**
 * Static assets from `static/` (stylesheet, icon, the island bundle). Only plain file names with a known
 * extension are served, so no path can leave the folder; assets hold no data, hence `auth: "public"`.
 */
import { HttpError } from "../lib/http.ts";
import type { Ctx } from "../lib/router.ts";

const DIR = new URL("../static/", import.meta.url);
const TYPES: Record<string, string> = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png",
  ico: "image/x-icon",
  map: "application/json; charset=utf-8",
  webmanifest: "application/manifest+json",
};
const NAME = /^[a-z0-9][a-z0-9_-]*(?:\.[a-z0-9]+)*\.([a-z]+)$/;

export const handler = {
  async GET(ctx: Ctx): Promise<Response> {
    const name = ctx.params.file ?? "";
    const ext = NAME.exec(name)?.[1];
    if (!ext || !TYPES[ext]) throw new HttpError(404, `no asset ${JSON.stringify(name)}`);
    let stat: Deno.FileInfo;
    try {
      stat = await Deno.stat(new URL(name, DIR));
    } catch {
      throw new HttpError(404, `no asset ${JSON.stringify(name)}`);
    }
    if (!stat.isFile) throw new HttpError(404, `no asset ${JSON.stringify(name)}`);
    // Revalidated on every load (no-cache) but answered with 304 while unchanged: rebuilds show up at once.
    const etag = `"${stat.size.toString(36)}-${(stat.mtime?.getTime() ?? 0).toString(36)}"`;
    const headers = {
      "content-type": TYPES[ext],
      "cache-control": "no-cache",
      etag,
      "x-content-type-options": "nosniff",
      // The web push service worker lives here but serves every page (it opens sessions on a click).
      ...(name === "sw.js" ? { "service-worker-allowed": "/" } : {}),
    };
    if (ctx.req.headers.get("if-none-match") === etag) return new Response(null, { status: 304, headers });
    const body = ctx.req.method === "HEAD" ? null : await Deno.readFile(new URL(name, DIR));
    return new Response(body, { headers: { ...headers, "content-length": String(stat.size) } });
  },
};
