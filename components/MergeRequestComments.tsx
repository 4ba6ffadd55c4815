/**
 * The review comments of a session's merge request, and the picker that sends some of them to the agent as
 * one follow-up. Comments are untrusted: their bodies render as Markdown through `ui/markdown.ts` (raw HTML
 * escaped, unsafe links dropped), their diff hunks as text. Reloaded when `refreshKey` changes (the page
 * bumps it when the merge request's record changes).
 */
import { useEffect, useState } from "preact/hooks";
import type { MergeRequestComment } from "../lib/protocol.ts";
import { ApiError, errorText } from "../ui/api.ts";
import { relativeTime } from "../ui/format.ts";
import { commentPlace, hunkLines } from "../ui/merge_request_view.ts";
import { mergeRequestComments, sendMergeRequestComments } from "../ui/rest.ts";
import { useCan } from "../ui/roles.ts";
import { Markdown } from "./Messages.tsx";

export function MergeRequestComments(
  { sessionId, online, refreshKey }: { sessionId: string; online: boolean; refreshKey: string },
) {
  const mayPick = useCan("ship");
  const [comments, setComments] = useState<MergeRequestComment[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [picked, setPicked] = useState<ReadonlySet<number>>(new Set());
  const [note, setNote] = useState("");
  const [busy, setBusy] = useState(false);
  const [sent, setSent] = useState<string | null>(null);
  const [sendError, setSendError] = useState<string | null>(null);

  useEffect(() => {
    let live = true;
    mergeRequestComments(sessionId).then(
      (c) => {
        if (!live) return;
        setComments(c.comments);
        setError(null);
        // A comment that is gone (deleted on GitLab) can no longer be picked.
        setPicked((p) => new Set([...p].filter((id) => c.comments.some((x) => x.id === id))));
      },
      (e) => live && setError(errorText(e)),
    );
    return () => {
      live = false;
    };
  }, [sessionId, refreshKey]);

  const toggle = (id: number) =>
    setPicked((p) => {
      const next = new Set(p);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });

  const send = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setSendError(null);
    setSent(null);
    try {
      const ids = (comments ?? []).map((c) => c.id).filter((id) => picked.has(id));
      await sendMergeRequestComments(sessionId, note.trim() ? { ids, note } : { ids });
      setSent(`Sent ${ids.length} ${ids.length === 1 ? "comment" : "comments"} to the agent.`);
      setPicked(new Set());
      setNote("");
    } catch (err) {
      setSendError(
        err instanceof ApiError && err.status === 409
          ? `The session is offline: ${err.message}`
          : errorText(err),
      );
    } finally {
      setBusy(false);
    }
  };

  if (error) return <p class="notice error small" role="alert">Review comments: {error}</p>;
  if (!comments) return <p class="muted small">Loading review comments…</p>;
  return (
    <details class="mr-comments" open={comments.length > 0} data-comments={comments.length}>
      <summary>
        Review comments <span class="count">{comments.length}</span>
      </summary>
      {comments.length === 0 && <p class="muted small">No review comments yet.</p>}
      <form onSubmit={send}>
        <ul class="mr-comment-list">
          {comments.map((c) => {
            const place = commentPlace(c);
            return (
              <li key={c.id} class="mr-comment" data-comment={c.id}>
                <label class="mr-comment-head">
                  {mayPick && (
                    <input
                      type="checkbox"
                      checked={picked.has(c.id)}
                      onChange={() => toggle(c.id)}
                      aria-label={`Pick the comment by ${c.author}${place ? ` on ${place}` : ""}`}
                    />
                  )}
                  <strong class="author">{c.author}</strong>
                  {place && <code class="place wrap">{place}</code>}
                  <span class="muted small">{relativeTime(Date.parse(c.createdAt) || null, Date.now())}</span>
                </label>
                {c.diffHunk && (
                  <pre class="diff unified mr-hunk">
                    {hunkLines(c.diffHunk).map((l, i) => (
                      <span key={i} class={`diff-line ${l.kind === "ctx" ? "same" : l.kind}`}>
                        {l.kind === "add" ? "+" : l.kind === "del" ? "-" : l.kind === "ctx" ? " " : ""}
                        {l.text}
                      </span>
                    ))}
                  </pre>
                )}
                <Markdown text={c.body} />
              </li>
            );
          })}
        </ul>
        {mayPick && comments.length > 0 && (
          <div class="mr-send">
            <textarea
              name="note"
              rows={2}
              placeholder="A note for the agent (optional)"
              aria-label="A note for the agent"
              value={note}
              onInput={(e) => setNote((e.target as HTMLTextAreaElement).value)}
            />
            <button type="submit" class="primary small" disabled={busy || picked.size === 0 || !online}>
              {busy ? "Sending…" : picked.size ? `Send ${picked.size} to agent` : "Send to agent"}
            </button>
            {!online && <p class="muted small">The session is offline: it cannot take a follow-up now.</p>}
          </div>
        )}
        {sent && <p class="small ok" role="status" data-sent>{sent}</p>}
        {sendError && <p class="notice error small" role="alert">{sendError}</p>}
      </form>
    </details>
  );
}
