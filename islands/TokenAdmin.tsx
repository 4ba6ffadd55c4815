/**
 * The tokens page (admins): named tokens with role, creation and last use (never a value), a form that makes
 * one and shows its value once with a copy button, and revoke (which the daemon applies at once, also to the
 * sockets and streams the token opened).
 */
import { useState } from "preact/hooks";
import { addToken, listTokens, revokeToken } from "../ui/rest.ts";
import { useAction } from "../ui/use_action.ts";
import type { TokenRow } from "../ui/types.ts";
import { ShownOnce } from "../components/ShownOnce.tsx";

const ROLES = ["viewer", "operator", "admin", "agent"] as const;

function day(ms: number | null): string {
  return ms === null ? "never" : new Date(ms).toISOString().replace("T", " ").slice(0, 16);
}

export default function TokenAdmin({ tokens: initial }: { tokens: TokenRow[] }) {
  const [tokens, setTokens] = useState(initial);
  const [name, setName] = useState("");
  const [role, setRole] = useState<string>("viewer");
  const [created, setCreated] = useState<{ name: string; token: string } | null>(null);
  const { busy, error, run } = useAction(async () => setTokens(await listTokens()));

  const add = (e: Event) => {
    e.preventDefault();
    void run(async () => {
      const made = await addToken(name.trim(), role);
      setCreated({ name: made.name, token: made.token });
      setName("");
    });
  };

  const revoke = (n: string) => {
    if (!confirm(`Revoke "${n}"? Whoever uses it is signed out at once.`)) return;
    void run(async () => void await revokeToken(n));
  };

  return (
    <main class="admin-page tokens-page">
      <h1>Tokens</h1>
      <form class="token-form" onSubmit={add}>
        <input
          type="text"
          name="token-name"
          aria-label="Name"
          placeholder="name (e.g. alice)"
          value={name}
          onInput={(e) => setName((e.target as HTMLInputElement).value)}
        />
        <select
          name="token-role"
          aria-label="Role"
          value={role}
          onChange={(e) => setRole((e.target as HTMLSelectElement).value)}
        >
          {ROLES.map((r) => <option key={r} value={r}>{r}</option>)}
        </select>
        <button type="submit" class="primary" disabled={busy || !name.trim()}>Create token</button>
      </form>
      {error && <p class="error" role="alert">{error}</p>}
      {created && (
        <ShownOnce
          id="new-token"
          value={created.token}
          label="New token value"
          data={{ "data-new-token": created.name }}
          onDone={() => setCreated(null)}
        >
          The token of <b>{created.name}</b>. It is shown only now: copy it before leaving this page.
        </ShownOnce>
      )}
      <table class="tokens">
        <thead>
          <tr>
            <th>name</th>
            <th>role</th>
            <th>created</th>
            <th>last used</th>
            <th></th>
          </tr>
        </thead>
        <tbody>
          {tokens.map((t) => (
            <tr key={t.name} data-token={t.name} class={t.revokedAt ? "revoked" : ""}>
              <td>{t.name}</td>
              <td>
                <span class={`chip role-${t.role}`}>{t.role}</span>
              </td>
              <td class="nowrap">{day(t.createdAt)}</td>
              <td class="nowrap">{day(t.lastUsedAt)}</td>
              <td>
                {t.revokedAt ? <span class="muted small">revoked {day(t.revokedAt)}</span> : (
                  <button
                    type="button"
                    class="danger small revoke"
                    disabled={busy}
                    onClick={() => revoke(t.name)}
                  >
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
          {tokens.length === 0 && (
            <tr>
              <td colSpan={5} class="muted">No named tokens yet (the bootstrap token is not listed).</td>
            </tr>
          )}
        </tbody>
      </table>
    </main>
  );
}
