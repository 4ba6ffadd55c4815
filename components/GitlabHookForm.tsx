/**
 * The inbound GitLab hook's part of the webhooks page: the URL to paste into GitLab and its secret — set,
 * generated (then shown once) or cleared, never shown back.
 */
import { useEffect, useState } from "preact/hooks";
import {
  clearGitlabHookSecret,
  type GitlabHookStatus,
  gitlabHookStatus,
  setGitlabHookSecret,
} from "../ui/rest.ts";
import { useAction } from "../ui/use_action.ts";
import { randomSecret } from "../ui/webhook_view.ts";
import { ShownOnce } from "./ShownOnce.tsx";

/** The inbound GitLab hook: its URL to paste into GitLab, and its secret (set or cleared, never shown back). */
export function GitlabHookForm({ initial }: { initial: GitlabHookStatus }) {
  const [status, setStatus] = useState(initial);
  const [secret, setSecret] = useState("");
  const [generated, setGenerated] = useState(false);
  const [saved, setSaved] = useState<string | null>(null);
  const { busy, error, run } = useAction(async () => setStatus(await gitlabHookStatus()));
  // The page's own origin is only known in the browser; the server renders the path.
  const [origin, setOrigin] = useState("");
  useEffect(() => setOrigin(location.origin), []);

  const save = (e: Event) => {
    e.preventDefault();
    const value = secret;
    void run(async () => {
      await setGitlabHookSecret(value);
      // A generated secret exists nowhere else yet: show it this once, for GitLab's "Secret token" field.
      setSaved(generated ? value : null);
      setSecret("");
      setGenerated(false);
    });
  };

  const clear = () => {
    if (!confirm("Clear the GitLab hook secret? /hooks/gitlab answers 404 until a new one is set.")) return;
    void run(async () => {
      await clearGitlabHookSecret();
      setSaved(null);
    });
  };

  const state = status.source === "env"
    ? "On: the secret comes from LVMH_GITLAB_HOOK_SECRET in the daemon's environment (change it there)."
    : status.source === "api"
    ? "On: a secret is set."
    : "Off: no secret is set, so the hook answers 404.";
  return (
    <section aria-labelledby="gitlab-hook" class="gitlab-hook" data-source={status.source ?? "none"}>
      <h2 id="gitlab-hook">GitLab hook</h2>
      <p class="small">
        In GitLab, add a project webhook to <code>{origin}{status.path}</code>{" "}
        with the secret token below, for comments and pipeline events. A comment starting with{" "}
        <code>/lvmh</code>{" "}
        prompts the session on that branch (or spawns one); a failed pipeline tells its session.
      </p>
      <p class="small hook-state" role="status">{state}</p>
      <form class="token-form" onSubmit={save}>
        <input
          type={generated ? "text" : "password"}
          name="gitlab-secret"
          aria-label="GitLab hook secret"
          autocomplete="new-password"
          placeholder={status.enabled
            ? "new secret (replaces the current one)"
            : "secret (16 characters or more)"}
          minLength={16}
          value={secret}
          onInput={(e) => {
            setSecret((e.target as HTMLInputElement).value);
            setGenerated(false);
          }}
        />
        <button
          type="button"
          class="ghost small generate"
          onClick={() => {
            setSecret(randomSecret());
            setGenerated(true);
          }}
        >
          Generate
        </button>
        <button type="submit" class="primary" disabled={busy || secret.length < 16}>Save secret</button>
        {status.source === "api" && (
          <button type="button" class="danger small clear" disabled={busy} onClick={clear}>Clear</button>
        )}
      </form>
      {error && <p class="error" role="alert">{error}</p>}
      {saved && (
        <ShownOnce
          id="gitlab-secret-value"
          value={saved}
          label="Saved GitLab secret"
          data={{ "data-new-gitlab-secret": "" }}
          onDone={() => setSaved(null)}
        >
          The secret is saved. It is shown only now: paste it into GitLab's Secret token.
        </ShownOnce>
      )}
    </section>
  );
}
