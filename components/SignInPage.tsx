/** What every page shows without valid credentials: the sign-in island and nothing else (no session data). */
import { Island, renderPage } from "../lib/render.tsx";
import SignIn from "../islands/SignIn.tsx";

/** The sign-in page as a 401 response; `failed` after a rejected form post. */
export function signInPage(failed = false): Response {
  const props = failed ? { message: "That token was not accepted." } : {};
  return renderPage(<Island name="SignIn" component={SignIn} props={props} />, {
    title: "Sign in · lvmh",
    status: 401,
    bodyClass: "page-signin",
  });
}
