/**
 * The spawn panel: connect GitLab with a personal access token, pick a repository (searchable, most recently
 * active first), optionally a branch, and start a pi session in a container; jobs update live from
 * `spawn_status` frames on `/ws`, and a running one can be stopped. The token is sent once and never shown.
 */
import { can, type Me } from "../ui/roles.ts";
import { useEffect, useMemo, useState } from "preact/hooks";
import type { SpawnJob } from "../lib/protocol.ts";
import type { GitlabRepo, GitlabStatus } from "../ui/types.ts";
import { pageLive } from "../ui/live.ts";
import { useAction } from "../ui/use_action.ts";
import * as rest from "../ui/rest.ts";
import { relativeTime } from "../ui/format.ts";

/** How many matching repositories the picker lists at once; typing narrows the rest. */
const SHOWN = 50;
/** The most recent jobs shown; older ones stay in `GET /api/spawn/status`. */
const JOBS_SHOWN = 8;

const STATE_TEXT: Record<SpawnJob["state"], string> = {
  queued: "queued",
  cloning: "cloning / pulling",
  building: "building image",
  starting: "starting container",
  running: "running",
  failed: "failed",
  stopped: "stopped",
};

/** Repositories whose path or name contains every word of `query`. */
function matching(repos: GitlabRepo[], query: string): GitlabRepo[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  return repos.filter((r) =>
    words.every((w) => r.path.toLowerCase().includes(w) || r.name.toLowerCase().includes(w))
  );
}

export default function SpawnPanel({ me = null }: { me?: Me | null }) {
  // Connecting GitLab is an admin's; an operator spawns on a connection an admin made.
  const mayConnect = can(me, "gitlab");
  const [status, setStatus] = useState<GitlabStatus | null>(null);
  const [repos, setRepos] = useState<GitlabRepo[] | null>(null);
  const [jobs, setJobs] = useState<SpawnJob[]>([]);
  const [token, setTokenInput] = useState("");
  const [query, setQuery] = useState("");
  const [selected, setSelected] = useState<GitlabRepo | null>(null);
  const [branch, setBranch] = useState("");
  const [now, setNow] = useState(0);
  const { busy, error, run } = useAction();

  async function loadRepos(refresh = false) {
    setRepos(await rest.gitlabRepos(refresh));
    setNow(Date.now());
  }

  useEffect(() => {
    run(async () => {
      const s = await rest.gitlabStatus();
      setStatus(s);
      if (s.connected) await loadRepos();
    });
    // The page's connection has the live list once it opened; until then (or without one) REST has it.
    const topic = pageLive().spawnJobs;
    const current = topic.get();
    if (current) setJobs(current);
    else rest.spawnStatus().then((j) => topic.get() ?? setJobs(j), () => {});
    return topic.subscribe((j) => j && setJobs(j));
  }, []);

  const connect = (e: Event) => {
    e.preventDefault();
    run(async () => {
      await rest.gitlabConnect(token.trim());
      setTokenInput(""); // the token is not kept in the page once the daemon has it
      setStatus(await rest.gitlabStatus());
      await loadRepos();
    });
  };

  const disconnect = () =>
    run(async () => {
      await rest.gitlabDisconnect();
      setStatus(await rest.gitlabStatus());
      setRepos(null);
      setSelected(null);
    });

  const spawn = (e: Event) => {
    e.preventDefault();
    if (!selected) return;
    run(async () => {
      const body = branch.trim() ? { repo: selected.path, branch: branch.trim() } : { repo: selected.path };
      await rest.spawn(body);
    });
  };

  const stop = (job: SpawnJob) =>
    run(async () => {
      await rest.stopContainer(job.sessionId);
    });

  const shown = useMemo(() => matching(repos ?? [], query).slice(0, SHOWN), [repos, query]);

  return (
    <section class="spawn-panel" data-spawn-panel>
      <h2>Start a session</h2>
      {error && <p class="error" role="alert">{error}</p>}
      {status && !status.connected && !mayConnect && (
        <p class="muted small spawn-needs-admin">
          An admin has to connect GitLab before sessions can be started.
        </p>
      )}
      {status && !status.connected && mayConnect && (
        <form class="spawn-connect" onSubmit={connect}>
          <p class="muted small">
            Connect GitLab at <code>{status.baseUrl}</code> with a personal access token with the scopes{" "}
            <code>api</code>, <code>read_repository</code> and{" "}
            <code>write_repository</code>: lvmh clones with it, pushes each session's own branch and opens its
            merge request. It is kept by the daemon only.
          </p>
          <input
            type="password"
            name="gitlab-token"
            aria-label="GitLab personal access token"
            placeholder="glpat-…"
            autocomplete="off"
            value={token}
            onInput={(e) => setTokenInput((e.target as HTMLInputElement).value)}
          />
          <button type="submit" class="primary" disabled={busy || token.trim().length < 8}>
            Connect GitLab
          </button>
        </form>
      )}
      {status?.connected && (
        <form class="spawn-form" onSubmit={spawn}>
          <p class="muted small">
            GitLab <code>{status.baseUrl}</code> as <strong>{status.username ?? "?"}</strong>{" "}
            {mayConnect && (
              <button type="button" class="link" onClick={disconnect} disabled={busy}>disconnect</button>
            )}
            <button type="button" class="link" onClick={() => run(() => loadRepos(true))} disabled={busy}>
              refresh
            </button>
          </p>
          <input
            type="search"
            name="repo-filter"
            aria-label="Search repositories"
            placeholder="Search repositories"
            value={query}
            onInput={(e) => setQuery((e.target as HTMLInputElement).value)}
          />
          {repos === null
            ? <p class="muted small">Loading repositories…</p>
            : (
              <ul class="repo-list" role="listbox" aria-label="Repositories">
                {shown.map((r) => (
                  <li key={r.path} role="option" aria-selected={selected?.path === r.path}>
                    <button
                      type="button"
                      class={`repo ${selected?.path === r.path ? "selected" : "ghost"}`}
                      data-repo={r.path}
                      onClick={() => (setSelected(r), setBranch(""))}
                    >
                      <span class="name">{r.path}</span>{" "}
                      <span class="muted small">
                        {relativeTime(r.lastActivityAt ? Date.parse(r.lastActivityAt) : null, now)}
                      </span>
                    </button>
                  </li>
                ))}
                {shown.length === 0 && <li class="muted small">No repository matches.</li>}
              </ul>
            )}
          <input
            type="text"
            name="branch"
            aria-label="Branch"
            placeholder={selected?.defaultBranch
              ? `branch (default ${selected.defaultBranch})`
              : "branch (default)"}
            value={branch}
            onInput={(e) => setBranch((e.target as HTMLInputElement).value)}
          />
          <button type="submit" class="primary" disabled={busy || !selected}>
            {selected ? `Spawn on ${selected.path}` : "Pick a repository"}
          </button>
        </form>
      )}
      {jobs.length > 0 && (
        <ul class="spawn-jobs" aria-label="Spawn jobs" aria-live="polite">
          {jobs.slice(0, JOBS_SHOWN).map((j) => (
            <li key={j.id} class={`spawn-job ${j.state}`} data-job={j.id} data-state={j.state}>
              <span class="name">{j.repo}{j.branch ? ` @ ${j.branch}` : ""}</span>{" "}
              <span class={`chip ${j.state === "failed" ? "error" : ""}`}>{STATE_TEXT[j.state]}</span>
              {j.error && <p class="error small">{j.error}</p>}
              {j.state === "running" && (
                <>
                  {" "}
                  <a href={`/sessions/${encodeURIComponent(j.sessionId)}`}>open</a>{" "}
                  <button
                    type="button"
                    class="danger small"
                    disabled={busy}
                    onClick={() => stop(j)}
                  >
                    Stop
                  </button>
                </>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
