/** Fresh's `_app.tsx`: the shell of every page, kept in `components/PageShell.tsx` so `lib/` can use it too. */
export { PageShell as default } from "../components/PageShell.tsx";
