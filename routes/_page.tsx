/**
 * The chrome of every page route, in one place (Fresh splits it into `_middleware.ts` and `_layout.tsx`):
 * the sign-in page without credentials (no session data), a 403 below the page's role, and the top bar with
 * its breadcrumb above the page's own content. A page route says what it needs and what it shows:
 *
 *     page(ctx, { need: "tokens", what: "Managing tokens" }, (me) => ({ title: "Tokens", body: … }))
 */
import type { ComponentChildren } from "preact";
import type { Ctx } from "../lib/router.ts";
import { Island, renderPage } from "../lib/render.tsx";
import SignIn from "../islands/SignIn.tsx";
import TopBarControls from "../islands/TopBarControls.tsx";
import { can, type Me, type UiAction } from "../ui/roles.ts";

/** What a page shows once the person may see it. */
export interface Page {
  /** The page's name: the document title ("… · lvmh") and the breadcrumb's current item. */
  title: string;
  body: ComponentChildren;
  /** The page kind on `<body>`, for CSS. */
  bodyClass?: string;
  status?: number;
  /**
   * The breadcrumb after "Sessions": by default the title; `crumb` replaces it, `null` leaves only the way
   * back (a page that is not what was asked for, such as a 404).
   */
  crumb?: ComponentChildren | null;
  /** The sessions page itself: its crumb is "Sessions", with no link back to it. */
  home?: boolean;
}

/** What a page requires beyond a signed-in person. */
export interface PageNeeds {
  /** The action the page is for; below its role the page is a 403 naming `what`. */
  need?: UiAction;
  /** How the 403 names the page ("Managing tokens"). */
  what?: string;
  /** The sign-in page says the last token was not accepted (after a rejected form post). */
  signInFailed?: boolean;
}

/**
 * Answer a page request: the sign-in page (401) without a principal, the admins-only page (403) when the
 * principal may not do `needs.need`, otherwise the page `render` describes inside the top bar and the shell.
 * @param render what the page shows to `me` (its 404 too, with `status`)
 */
export function page(ctx: Ctx, needs: PageNeeds, render: (me: Me) => Page): Response {
  if (!ctx.principal) return signInPage(needs.signInFailed);
  const me: Me = { name: ctx.principal.name, role: ctx.principal.role };
  return chrome(
    me,
    needs.need && !can(me, needs.need) ? forbidden(me, needs.what ?? "This page") : render(me),
  );
}

function chrome(me: Me, shown: Page): Response {
  return renderPage(
    <>
      <TopBar me={me}>{crumbs(shown)}</TopBar>
      {shown.body}
    </>,
    { title: `${shown.title} · lvmh`, bodyClass: shown.bodyClass, status: shown.status },
  );
}

function crumbs({ home, crumb, title }: Page): ComponentChildren {
  if (home) return <span aria-current="page">{title}</span>;
  if (crumb === null) return <a href="/">Sessions</a>;
  return (
    <>
      <a href="/">Sessions</a>
      <span aria-hidden="true">/</span>
      {crumb ?? <span aria-current="page">{title}</span>}
    </>
  );
}

/** What every page shows without valid credentials: the sign-in island and nothing else, as a 401. */
function signInPage(failed = false): Response {
  const props = failed ? { message: "That token was not accepted." } : {};
  return renderPage(<Island name="SignIn" component={SignIn} props={props} />, {
    title: "Sign in · lvmh",
    status: 401,
    bodyClass: "page-signin",
  });
}

/** What a signed-in person below the page's role sees: no data, a 403 and a way back. */
function forbidden(me: Me, what: string): Page {
  return {
    title: "Admins only",
    status: 403,
    crumb: null,
    body: (
      <main class="not-found" data-forbidden>
        <h1>Admins only</h1>
        <p>
          {what} is for admins; you are signed in as <b>{me.name}</b> ({me.role}).{" "}
          <a href="/">Back to all sessions</a>
        </p>
      </main>
    ),
  };
}

/**
 * The bar on top of every signed-in page (server-rendered): home link, what is shown, who is signed in with
 * which role (the admin pages for admins, this browser's notification settings for everyone), and the live
 * controls.
 */
function TopBar({ children, me }: { children?: ComponentChildren; me: Me }) {
  return (
    <header class="topbar">
      <a class="brand" href="/">
        <span class="logo" aria-hidden="true">◉</span> lvmh
      </a>
      <nav class="crumbs" aria-label="Breadcrumb">{children}</nav>
      <nav class="me" aria-label="Signed in">
        {me.role !== "agent" && <a href="/search" class="small">Search</a>}
        {me.role !== "agent" && <a href="/usage" class="small">Usage</a>}
        {can(me, "audit") && <a href="/audit" class="small">Audit</a>}
        {can(me, "tokens") && <a href="/tokens" class="small">Tokens</a>}
        {can(me, "webhooks") && <a href="/webhooks" class="small">Webhooks</a>}
        {me.role !== "agent" && <a href="/notifications" class="small">Notifications</a>}
        <span class="whoami small" data-me={me.name} data-role={me.role} title="signed in as">
          <span class="me-name">{me.name}</span> <span class={`chip role-${me.role}`}>{me.role}</span>
        </span>
      </nav>
      <Island name="TopBarControls" component={TopBarControls} props={{}} />
    </header>
  );
}
