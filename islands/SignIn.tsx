/**
 * The sign-in island, shown on any page requested without valid credentials. If this browser already holds a
 * token (the cookie expired or was cleared), it signs in with it once, silently, and reloads.
 */
import { useEffect, useState } from "preact/hooks";
import { SignInForm } from "../components/SignInForm.tsx";
import { clearToken, getToken, signIn } from "../ui/api.ts";

const RETRY_KEY = "lvmh.autoSignInAt";

export default function SignIn({ message }: { message?: string }) {
  const [trying, setTrying] = useState(false);

  useEffect(() => {
    const token = getToken();
    // Once per minute at most, so a cookie the browser refuses cannot cause a reload loop.
    const last = Number(sessionStorage.getItem(RETRY_KEY) ?? 0);
    if (!token || Date.now() - last < 60_000) return;
    sessionStorage.setItem(RETRY_KEY, String(Date.now()));
    setTrying(true);
    signIn(token).then((ok) => {
      if (ok) return location.reload();
      clearToken();
      setTrying(false);
    }).catch(() => setTrying(false));
  }, []);

  return (
    <main class="signin-page">
      {trying ? <p class="muted">Signing in…</p> : <SignInForm message={message} />}
    </main>
  );
}
