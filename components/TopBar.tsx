/**
 * The bar on top of every signed-in page (server-rendered): home link, what is shown, who is signed in with
 * which role (the admin pages for admins, this browser's notification settings for everyone), and the live
 * controls.
 */
import type { ComponentChildren } from "preact";
import { Island } from "../lib/render.tsx";
import { can, type Me } from "../ui/roles.ts";
import TopBarControls from "../islands/TopBarControls.tsx";

export function TopBar({ children, me }: { children?: ComponentChildren; me?: Me | null }) {
  return (
    <header class="topbar">
      <a class="brand" href="/">
        <span class="logo" aria-hidden="true">◉</span> lvmh
      </a>
      <nav class="crumbs" aria-label="Breadcrumb">{children}</nav>
      {me && (
        <nav class="me" aria-label="Signed in">
          {can(me, "audit") && <a href="/audit" class="small">Audit</a>}
          {can(me, "tokens") && <a href="/tokens" class="small">Tokens</a>}
          {can(me, "webhooks") && <a href="/webhooks" class="small">Webhooks</a>}
          {me.role !== "agent" && <a href="/notifications" class="small">Notifications</a>}
          <span class="whoami small" data-me={me.name} data-role={me.role} title="signed in as">
            <span class="me-name">{me.name}</span> <span class={`chip role-${me.role}`}>{me.role}</span>
          </span>
        </nav>
      )}
      <Island name="TopBarControls" component={TopBarControls} props={{}} />
    </header>
  );
}
