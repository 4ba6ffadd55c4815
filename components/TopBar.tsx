/** The bar on top of every signed-in page (server-rendered): home link, what is shown, and the live controls. */
import type { ComponentChildren } from "preact";
import { Island } from "../lib/render.tsx";
import TopBarControls from "../islands/TopBarControls.tsx";

export function TopBar({ children }: { children?: ComponentChildren }) {
  return (
    <header class="topbar">
      <a class="brand" href="/">
        <span class="logo" aria-hidden="true">◉</span> lvmh
      </a>
      <nav class="crumbs" aria-label="Breadcrumb">{children}</nav>
      <Island name="TopBarControls" component={TopBarControls} props={{}} />
    </header>
  );
}
