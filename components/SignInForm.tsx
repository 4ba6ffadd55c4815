/** The token form: posts to `/login` (works before hydration too), and from the island stores the token. */
import { useState } from "preact/hooks";
import { errorText, signIn } from "../ui/api.ts";

export function SignInForm({ message }: { message?: string }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState(message ?? "");
  const [busy, setBusy] = useState(false);

  async function submit(e: Event) {
    e.preventDefault();
    const value = token.trim();
    if (!value) return setError("Paste the token first.");
    setBusy(true);
    try {
      if (await signIn(value)) return location.reload();
      setError("That token was not accepted.");
    } catch (err) {
      setError(`Could not reach the daemon: ${errorText(err)}`);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form class="signin" method="post" action="/login" onSubmit={submit}>
      <h1>
        <span class="logo" aria-hidden="true">◉</span> lvmh
      </h1>
      <p class="muted">
        Paste the daemon's token (<code>LVMH_TOKEN</code>) to watch and steer your pi sessions. It is kept in
        this browser only.
      </p>
      <label for="token">Token</label>
      <input
        id="token"
        name="token"
        type="password"
        autocomplete="current-password"
        required
        autofocus
        value={token}
        onInput={(e) => setToken((e.target as HTMLInputElement).value)}
      />
      <button type="submit" class="primary" disabled={busy}>{busy ? "Signing in…" : "Sign in"}</button>
      {error && <p class="error" role="alert">{error}</p>}
    </form>
  );
}
