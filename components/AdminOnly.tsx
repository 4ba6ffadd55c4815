/** What a signed-in person below admin sees on an admin page: no data, a 403 and a way back. */
import { renderPage } from "../lib/render.tsx";
import type { Me } from "../ui/roles.ts";
import { TopBar } from "./TopBar.tsx";

/** The 403 page of the admin pages (audit, tokens). */
export function adminOnlyPage(me: Me, what: string): Response {
  return renderPage(
    <>
      <TopBar me={me}>
        <a href="/">Sessions</a>
      </TopBar>
      <main class="not-found" data-forbidden>
        <h1>Admins only</h1>
        <p>
          {what} is for admins; you are signed in as <b>{me.name}</b> ({me.role}).{" "}
          <a href="/">Back to all sessions</a>
        </p>
      </main>
    </>,
    { title: "Admins only · lvmh", status: 403 },
  );
}
