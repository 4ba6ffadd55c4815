/**
 * The HTML shell of every page: head, stylesheet, the one island bundle, body. It sits below both the routes
 * (`routes/_app.tsx` names it, as Fresh does) and `lib/render.tsx` (which wraps every page in it).
 */
import type { ComponentChildren } from "preact";

interface PageShellProps {
  title: string;
  bodyClass?: string;
  children: ComponentChildren;
}

export function PageShell({ title, bodyClass, children }: PageShellProps) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light dark" />
        <title>{title}</title>
        <link rel="icon" href="/static/favicon.svg" type="image/svg+xml" />
        <link rel="stylesheet" href="/static/style.css" />
        <link rel="manifest" href="/static/manifest.webmanifest" />
        <meta name="theme-color" content="#3b5bdb" />
        <script type="module" src="/static/client.js"></script>
        <script type="module" src="/static/pwa.js"></script>
      </head>
      <body class={bodyClass}>{children}</body>
    </html>
  );
}
