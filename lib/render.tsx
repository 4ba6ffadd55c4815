/**
 * Page rendering and the server half of the island loader.
 *
 * A page is a Preact tree rendered to a string (Preact escapes all text and attribute values). Each island is
 * wrapped in `<div data-island="Name">` holding its props as `<script type="application/json">` (with `<`
 * escaped, so no prop can close the script element) followed by the island's server render. `client.tsx`
 * hydrates exactly those elements from one bundle; everything else on the page stays static HTML.
 */
import type { ComponentType, JSX, VNode } from "preact";
import { renderToString } from "preact-render-to-string";
import { PageShell } from "../components/PageShell.tsx";

/**
 * Content-Security-Policy of every page: scripts only from our origin (no inline script; island props are JSON
 * data blocks, which CSP does not execute), styles only from our stylesheet, sockets and fetches only to us.
 */
export const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const PAGE_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "content-security-policy": CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cache-control": "no-store",
};

/**
 * Serialise island props for a JSON data block; `<` becomes `\u003c` so `</script>` cannot appear.
 * @throws {TypeError} when props are not JSON-serialisable (cycles, BigInt)
 */
export function propsJson(props: unknown): string {
  return JSON.stringify(props ?? {}).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(
    /\u2029/g,
    "\\u2029",
  );
}

interface IslandProps<P> {
  /** Registry name: the file name in `islands/` without extension. */
  name: string;
  component: ComponentType<P>;
  props: P;
}

/** Render an island: the marker, its props as JSON, and its server-side render to hydrate. */
export function Island<P>({ name, component: Component, props }: IslandProps<P>): VNode {
  return (
    <div data-island={name} class="island">
      <script type="application/json" dangerouslySetInnerHTML={{ __html: propsJson(props) }} />
      <Component {...(props as P & JSX.IntrinsicAttributes)} />
    </div>
  );
}

export interface PageOptions {
  title: string;
  status?: number;
  /** Extra classes on <body> (e.g. the page kind, for CSS). */
  bodyClass?: string;
  headers?: Record<string, string>;
}

/**
 * Render a page inside the page shell (`components/PageShell.tsx`) to a complete HTML response with the CSP and security headers.
 * @param body the page content
 */
export function renderPage(body: VNode, opts: PageOptions): Response {
  const html = "<!DOCTYPE html>" + renderToString(
    <PageShell title={opts.title} bodyClass={opts.bodyClass}>
      {body}
    </PageShell>,
  );
  return new Response(html, { status: opts.status ?? 200, headers: { ...PAGE_HEADERS, ...opts.headers } });
}
