/** The HTML shell of every page (Fresh's `_app.tsx`): head, stylesheet, the one island bundle, body. */
import type { ComponentChildren } from "preact";

interface AppProps {
  title: string;
  bodyClass?: string;
  children: ComponentChildren;
}

export default function App({ title, bodyClass, children }: AppProps) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light dark" />
        <title>{title}</title>
        <link rel="icon" href="/static/favicon.svg" type="image/svg+xml" />
        <link rel="stylesheet" href="/static/style.css" />
        <script type="module" src="/static/client.js"></script>
      </head>
      <body class={bodyClass}>{children}</body>
    </html>
  );
}
