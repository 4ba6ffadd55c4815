/**
 * A spawned session's merge request on its page. Without one: a form (title from the session's title, an
 * optional description, the target branch — the session's base branch unless changed —, draft) that pushes
 * the session's work and opens it. With one: `!iid` linking to GitLab, its state, pipeline and merge status,
 * an action that pushes new commits, and the review comments with their picker. Reloaded when a run settles
 * (`refreshKey`) and when the session row's merge request summary changes (`summaryKey`). What a viewer may
 * not do is not offered; the daemon refuses it anyway.
 */
import { useEffect, useState } from "preact/hooks";
import type { Changes, MergeRequestView } from "../lib/protocol.ts";
import { ApiError, errorText } from "../ui/api.ts";
import {
  defaultMergeRequestTitle,
  mergeStatusWords,
  pipelineTone,
  pipelineWords,
  shipBody,
  type ShipFailure,
  shipFailure,
} from "../ui/merge_request_view.ts";
import { sessionChanges, sessionMergeRequest, shipMergeRequest } from "../ui/rest.ts";
import { useCan } from "../ui/roles.ts";
import { MergeRequestComments } from "./MergeRequestComments.tsx";

interface Props {
  sessionId: string;
  /** The session's title: the new merge request's title at first. */
  title: string;
  online: boolean;
  /** Bumped by the page when a run settles. */
  refreshKey: number;
  /** Changes when the session row's merge request summary does (a hook event, the 30 s refresh). */
  summaryKey: string;
  /** The session row has a merge request summary: without one (and none opened here) nothing is asked. */
  hasMergeRequest: boolean;
}

export function MergeRequestPanel(props: Props) {
  const { sessionId } = props;
  const mayShip = useCan("ship");
  // undefined: loading; null: the session has none.
  const [mr, setMr] = useState<MergeRequestView | null | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const [reload, setReload] = useState(0);
  const [formOpen, setFormOpen] = useState(false);

  // Opened from this page: the row's summary follows with the session's next update.
  const [openedHere, setOpenedHere] = useState(false);
  const ask = props.hasMergeRequest || openedHere;

  useEffect(() => {
    if (!ask) {
      setMr(null);
      return;
    }
    let live = true;
    sessionMergeRequest(sessionId).then(
      (m) => {
        if (!live) return;
        setMr(m);
        setError(null);
      },
      (e) => {
        if (!live) return;
        if (e instanceof ApiError && e.status === 404) {
          setMr(null);
          setError(null);
        } else setError(errorText(e));
      },
    );
    return () => {
      live = false;
    };
  }, [sessionId, props.refreshKey, props.summaryKey, reload, ask]);

  const shipped = () => {
    setFormOpen(false);
    setOpenedHere(true);
    setReload((n) => n + 1);
  };

  return (
    <section
      class="panel mr-panel"
      aria-label="Merge request"
      data-mr={mr ? mr.iid : mr === null ? "none" : "loading"}
    >
      <h2>
        Merge request
        {mr && (
          <button
            type="button"
            class="link small mr-refresh"
            onClick={() => setReload((n) => n + 1)}
            aria-label="Refresh the merge request and its comments"
          >
            refresh
          </button>
        )}
      </h2>
      {error && <p class="notice error small" role="alert">{error}</p>}
      {mr === undefined && !error && <p class="muted small">Loading…</p>}
      {mr && (
        <MergeRequestFacts
          mr={mr}
          sessionId={sessionId}
          online={props.online}
          mayShip={mayShip}
          reload={reload}
          onPushed={() => setReload((n) => n + 1)}
        />
      )}
      {mr === null && !mayShip && <p class="muted small">No merge request yet.</p>}
      {(mr === null || (mr && mr.state !== "opened")) && mayShip && (
        formOpen
          ? (
            <ShipForm
              sessionId={sessionId}
              defaultTitle={defaultMergeRequestTitle(props.title)}
              onShipped={shipped}
              onCancel={() => setFormOpen(false)}
            />
          )
          : (
            <button type="button" class="small" data-open-mr-form onClick={() => setFormOpen(true)}>
              {mr ? "Open a new merge request…" : "Open a merge request…"}
            </button>
          )
      )}
    </section>
  );
}

function MergeRequestFacts(
  { mr, sessionId, online, mayShip, reload, onPushed }: {
    mr: MergeRequestView;
    sessionId: string;
    online: boolean;
    mayShip: boolean;
    /** Bumped by a person's refresh: the comments are read again too. */
    reload: number;
    onPushed(): void;
  },
) {
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<ShipFailure | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const status = mergeStatusWords(mr.mergeStatus);

  const update = async () => {
    setBusy(true);
    setFailure(null);
    setDone(null);
    try {
      const { mergeRequest } = await shipMergeRequest(sessionId, { title: mr.title });
      setDone(
        mergeRequest.sha === mr.sha
          ? "Nothing new: the branch already holds this work."
          : `Pushed ${mergeRequest.sha.slice(0, 8)}.`,
      );
      onPushed();
    } catch (e) {
      const f = shipFailure(e);
      // Nothing new to push is an answer, not a failure, once the merge request exists.
      if (f.kind === "nothing") setDone(f.message);
      else setFailure(f);
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <p class="mr-head">
        <a href={mr.webUrl} target="_blank" rel="noopener noreferrer" class="mr-link" data-mr-link>
          !{mr.iid}
        </a>{" "}
        <span class={`chip mr-state ${mr.state}`} data-mr-state={mr.state}>{mr.state}</span>{" "}
        <span class="wrap">{mr.title}</span>
      </p>
      <p class="small muted wrap">
        <code>{mr.sourceBranch}</code> → <code>{mr.targetBranch}</code> at <code>{mr.sha.slice(0, 8)}</code>
      </p>
      <dl class="facts small">
        <dt>Pipeline</dt>
        <dd data-pipeline={mr.pipeline?.status ?? "none"}>
          {mr.pipeline
            ? (
              <a
                href={mr.pipeline.webUrl}
                target="_blank"
                rel="noopener noreferrer"
                class={`mr-tone ${pipelineTone(mr.pipeline.status)}`}
              >
                {pipelineWords(mr.pipeline.status)}
              </a>
            )
            : <span class="muted">none yet</span>}
        </dd>
        {status && (
          <>
            <dt>Merge</dt>
            <dd data-merge-status={mr.mergeStatus}>{status}</dd>
          </>
        )}
      </dl>
      {mayShip && mr.state === "opened" && (
        <div class="mr-actions">
          <button type="button" class="small" disabled={busy} onClick={update} data-mr-update>
            {busy ? "Pushing…" : "Update"}
          </button>
          <span class="muted small">pushes the session's new commits to the branch</span>
        </div>
      )}
      {done && <p class="small" role="status" data-mr-done>{done}</p>}
      {failure && <FailureNote f={failure} />}
      <MergeRequestComments
        sessionId={sessionId}
        online={online}
        refreshKey={`${mr.iid}:${mr.notes}:${mr.updatedAt}:${reload}`}
      />
    </>
  );
}

function ShipForm(
  { sessionId, defaultTitle, onShipped, onCancel }: {
    sessionId: string;
    defaultTitle: string;
    onShipped(): void;
    onCancel(): void;
  },
) {
  const [title, setTitle] = useState(defaultTitle);
  const [description, setDescription] = useState("");
  const [target, setTarget] = useState("");
  const [draft, setDraft] = useState(false);
  const [changes, setChanges] = useState<Changes | null>(null);
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<ShipFailure | null>(null);

  // What would be pushed, and the base branch the target defaults to (the daemon's default too).
  useEffect(() => {
    let live = true;
    sessionChanges(sessionId, "all").then((c) => {
      if (!live) return;
      setChanges(c);
      if (c.base) setTarget((t) => t || c.base!.branch);
    }, () => {});
    return () => {
      live = false;
    };
  }, [sessionId]);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setFailure(null);
    try {
      await shipMergeRequest(sessionId, shipBody({ title, description, targetBranch: target, draft }));
      onShipped();
    } catch (err) {
      setFailure(shipFailure(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="mr-form" onSubmit={submit} data-mr-form>
      {changes && changes.base && (
        <p class="small muted" data-mr-changes>
          {changes.stats.files} {changes.stats.files === 1 ? "file" : "files"}{" "}
          <span class="add">+{changes.stats.additions}</span>{" "}
          <span class="del">−{changes.stats.deletions}</span>
          {` since ${changes.base.branch}`}
          {changes.commits.length > 0 &&
            ` · ${changes.commits.length} ${changes.commits.length === 1 ? "commit" : "commits"}`}
        </p>
      )}
      <label>
        <span class="small">Title</span>
        <input
          name="title"
          required
          maxLength={255}
          value={title}
          onInput={(e) => setTitle((e.target as HTMLInputElement).value)}
        />
      </label>
      <label>
        <span class="small">Description</span>
        <textarea
          name="description"
          rows={3}
          value={description}
          placeholder="Optional"
          onInput={(e) => setDescription((e.target as HTMLTextAreaElement).value)}
        />
      </label>
      <label>
        <span class="small">Target branch</span>
        <input
          name="target"
          value={target}
          placeholder="the session's base branch"
          autocomplete="off"
          onInput={(e) => setTarget((e.target as HTMLInputElement).value)}
        />
      </label>
      <label class="check">
        <input type="checkbox" name="draft" checked={draft} onChange={() => setDraft(!draft)} />
        <span class="small">Draft</span>
      </label>
      <p class="small muted">
        Uncommitted changes are committed with the title as the message, then pushed to the session's own
        branch.
      </p>
      <div class="mr-actions">
        <button type="submit" class="primary small" disabled={busy || !title.trim()}>
          {busy ? "Pushing…" : "Push and open"}
        </button>
        <button type="button" class="ghost small" onClick={onCancel} disabled={busy}>Cancel</button>
      </div>
      {failure && <FailureNote f={failure} />}
    </form>
  );
}

/** A failed ship call, as a person can act on it. */
function FailureNote({ f }: { f: ShipFailure }) {
  switch (f.kind) {
    case "nothing":
      return <p class="notice small" role="alert" data-failure="nothing">Nothing to push: {f.message}</p>;
    case "not-connected":
      return (
        <p class="notice error small" role="alert" data-failure="not-connected">
          GitLab is not connected. <a href="/">Connect GitLab</a> (an admin can, on the sessions page).
        </p>
      );
    case "secrets":
      return (
        <div class="notice error small mr-secrets" role="alert" data-failure="secrets">
          <p>Nothing was pushed: these added lines look like secrets.</p>
          {f.secrets.length > 0
            ? (
              <ul>
                {f.secrets.map((s) => (
                  <li key={`${s.file}:${s.line}`}>
                    <code>{s.file}:{s.line}</code> <span class="muted">({s.kind})</span>
                  </li>
                ))}
              </ul>
            )
            : <p>{f.message}</p>}
          <p class="muted">Ask the agent to remove them, then try again.</p>
        </div>
      );
    case "gitlab":
      return <p class="notice error small" role="alert" data-failure="gitlab">GitLab refused: {f.message}</p>;
    case "other":
      return <p class="notice error small" role="alert" data-failure="other">{f.message}</p>;
  }
}
