/**
 * The session page: the conversation (server-rendered from the latest page of events, then live), streaming
 * deltas, older history on scroll, the side panels, and the composer. Each concern is a hook in `ui/`:
 * the summary row, the conversation, the scroll pin, notifications, and the actions.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { ApprovalDecision, SessionSummary } from "../lib/protocol.ts";
import { ApprovalCard } from "../components/ApprovalCard.tsx";
import { AskSetControl } from "../components/AskSetControl.tsx";
import { ChangesView } from "../components/ChangesView.tsx";
import { Composer } from "../components/Composer.tsx";
import { MergeRequestPanel } from "../components/MergeRequestPanel.tsx";
import { WorkerPanel } from "../components/WorkerPanel.tsx";
import { MessageBlockView, StreamingMessage } from "../components/Messages.tsx";
import { SinceCard } from "../components/SinceCard.tsx";
import { SessionFacts, SubagentPanel, TodoPanel, UsagePanel } from "../components/SidePanels.tsx";
import { BudgetBar } from "../components/BudgetBar.tsx";
import { PresenceBar, useSteeredBy } from "../components/PresenceBar.tsx";
import { BudgetForm } from "../components/BudgetForm.tsx";
import { buildConversation, streamingText, streamingThinking } from "../ui/conversation.ts";
import { deriveSubagents, deriveTodos } from "../ui/derive.ts";
import { messageBlocks } from "../ui/message_blocks.ts";
import type { UiEvent } from "../ui/types.ts";
import { useApprovals } from "../ui/use_approvals.ts";
import { useApprovalKeys } from "../ui/use_approval_keys.ts";
import { useClock } from "../ui/use_clock.ts";
import { useConversation } from "../ui/use_conversation.ts";
import { useScrollPin, useWhenVisible } from "../ui/use_scroll_pin.ts";
import { sessionActions } from "../ui/session_actions.ts";
import { useSessionSummary } from "../ui/use_session_summary.ts";
import { useWatch } from "../ui/use_watch.ts";
import { useWriteBases, WriteBasesContext } from "../ui/write_diff.ts";
import { sessionTitle } from "../ui/glance.ts";
import { readLastSeen, summariseSince, writeLastSeen } from "../ui/last_seen.ts";
import { can, type Me, MeContext } from "../ui/roles.ts";
import { useMoment } from "../ui/use_moment.ts";
import { ExportLinks, RunsView } from "../components/RunsView.tsx";

interface Props {
  session: SessionSummary;
  /** The latest page of persisted events, ascending. */
  events: UiEvent[];
  hasOlder: boolean;
  now: number;
  /** Who is signed in: what the role may not do is not offered. */
  me?: Me | null;
  /** The first line of the session's first prompt, for the title while pi has no name for it. */
  firstPrompt?: string | null;
  /** `?at=SEQ`: open the conversation at that event, highlighted. */
  at?: number | null;
}

export default function SessionView(props: Props) {
  const id = props.session.id;
  const now = useClock(props.now);
  const { session, deleted, patch } = useSessionSummary(props.session);
  const me = props.me ?? null;
  const steeredBy = useSteeredBy(id, me?.name ?? null, now);
  const firstUser = useMemo(() => props.firstPrompt ?? null, [props.firstPrompt]);
  const { conv, hasOlder, loadingOlder, loadOlder } = useConversation(
    id,
    props.events,
    props.hasOlder,
    sessionTitle(session, firstUser),
  );
  // The first prompt, once one arrives live (a new session's title follows its first prompt).
  const livePrompt = useMemo(() => {
    if (firstUser || conv.firstSeq > 1) return firstUser;
    const u = conv.items.find((i) => i.kind === "user");
    return u && u.kind === "user"
      ? u.text.split("\n").map((l) => l.trim()).find(Boolean)?.slice(0, 60) ?? null
      : null;
  }, [firstUser, conv.items, conv.firstSeq]);
  const title = sessionTitle(session, livePrompt);
  // Where this browser stopped reading last time: read once after hydration (the server cannot know it).
  const [seenAt, setSeenAt] = useState<number | null>(null);
  useEffect(() => {
    const seen = readLastSeen(id);
    if (seen !== null && seen < conv.lastSeq) setSeenAt(seen);
  }, [id]);
  useEffect(() => {
    if (conv.lastSeq > 0) writeLastSeen(id, conv.lastSeq);
  }, [id, conv.lastSeq]);
  const since = useMemo(() => seenAt === null ? null : summariseSince(conv.events, seenAt), [
    seenAt,
    conv.events,
  ]);
  const dividerAt = seenAt === null ? -1 : conv.items.findIndex((i) => i.seq > seenAt);
  const pin = useScrollPin(conv);
  useMoment(props.at ?? null, conv.items);
  const top = useRef<HTMLDivElement>(null);
  useWhenVisible(top, hasOlder, () => void loadOlder(pin.keepPlace), [loadingOlder]);
  const [watched, toggleWatch] = useWatch(id);
  const actions = useMemo(() => sessionActions(id, patch), [id]);
  const { views, decide } = useApprovals(id, conv);
  const pending = useMemo(() => [...views.values()].filter((a) => a.state === "pending"), [views]);
  useApprovalKeys(can(me, "approve") ? pending : [], decide);
  // A pending approval by its call: the approvals frame brings it before the event that names its call.
  const byCall = useMemo(() => new Map(pending.map((a) => [a.toolCallId, a])), [pending]);
  // Approvals whose call is in no message held (older history, or asked before its message arrived).
  const loose = useMemo(
    () =>
      [...views.values()].filter((a) =>
        !conv.tools[a.toolCallId]?.inMessage && (a.state === "pending" || conv.approvals[a.id])
      ),
    [views, conv.tools],
  );

  // Messages in blocks of seqs, each skipped while its messages are the same objects (message_blocks.ts).
  const blocks = useMemo(() =>
    messageBlocks(conv.items.map((item) => {
      const ids = item.kind === "assistant" ? item.toolCalls : [];
      return {
        item,
        calls: ids.map((t) => conv.tools[t]).filter(Boolean),
        approvals: ids.map((t) => views.get(conv.tools[t]?.approvalId ?? "") ?? byCall.get(t) ?? null),
      };
    })), [conv.items, conv.tools, views, byCall]);
  const divider = since && dividerAt >= 0 ? { before: conv.items[dividerAt].key, since } : null;
  // The same function across renders (blocks compare it); it calls the latest `decide`.
  const decideRef = useRef(decide);
  decideRef.current = decide;
  const onDecide = useCallback(
    (id: string, d: ApprovalDecision, reason?: string) => decideRef.current(id, d, reason),
    [],
  );

  const calls = useMemo(() => conv.toolOrder.map((t) => conv.tools[t]), [conv.tools, conv.toolOrder]);
  // `?at=SEQ`: the usage and todo panels as they were at that event, folded from the log up to it.
  const [atSeq, setAtSeq] = useState(props.at ?? null);
  const past = useMemo(
    () => atSeq === null ? null : buildConversation(conv.events.filter((e) => e.seq <= atSeq)),
    [conv.events, atSeq],
  );
  const panels = past ?? conv;
  const todos = useMemo(() => deriveTodos(panels.toolOrder.map((t) => panels.tools[t])), [panels]);
  // What each write replaced, as far as the conversation shows it: its card shows the change as a diff.
  const bases = useWriteBases(calls);
  const subagents = useMemo(() => deriveSubagents(calls), [calls]);
  const running = session.online && session.state === "running";
  // The models a switch may pick: the latest session_info's, else the row's (rendered with the page).
  const steered = useMemo(() => conv.models ? { ...session, models: conv.models } : session, [
    session,
    conv.models,
  ]);
  // The Changes view replaces the conversation while open, and reloads each time a run settles.
  const [view, setView] = useState<"conversation" | "changes" | "runs">("conversation");
  const [settled, setSettled] = useState(0);
  const wasRunning = useRef(running);
  useEffect(() => {
    if (wasRunning.current && !running) setSettled((n) => n + 1);
    wasRunning.current = running;
  }, [running]);
  const streaming = conv.streaming ? streamingText(conv.streaming) : null;
  const thinking = streamingThinking(conv.streaming);

  // The tab says what the agent is doing, for a page kept open in the background.
  useEffect(() => {
    const mark = !session.online ? "○" : running ? "●" : "✓";
    document.title = `${mark} ${title} · lvmh`;
  }, [running, session.online, title]);

  return (
    <MeContext.Provider value={me}>
      <div class="session-page">
        <aside class="side">
          <h1 class="session-name wrap">{title}</h1>
          <div class="state-line">
            <span class={`dot ${session.online ? "on" : "off"}`} aria-hidden="true"></span>
            <span
              class={`state ${running ? "running" : "settled"}`}
              data-state={running ? "running" : session.online ? "settled" : "offline"}
            >
              {!session.online ? "offline" : running ? "running" : "settled"}
            </span>
            <button
              type="button"
              class={`ghost small watch ${watched ? "on" : ""}`}
              aria-pressed={watched}
              onClick={toggleWatch}
            >
              {watched ? "✓ Notifying when done" : "Notify when done"}
            </button>
          </div>
          <PresenceBar sessionId={id} me={me?.name ?? null} now={now} />
          <div class="view-switch" role="group" aria-label="Show">
            {(["conversation", "runs", "changes"] as const).map((v) => (
              <button
                type="button"
                key={v}
                class={`ghost small ${view === v ? "on" : ""}`}
                aria-pressed={view === v}
                data-view={v}
                onClick={() => setView(v)}
              >
                {v === "conversation" ? "Conversation" : v === "runs" ? "Runs" : "Changes"}
              </button>
            ))}
          </div>
          <SessionFacts s={session} now={now} />
          <ExportLinks sessionId={id} />
          {session.agent && (
            <MergeRequestPanel
              sessionId={id}
              title={title}
              online={session.online}
              refreshKey={settled}
              summaryKey={JSON.stringify(session.mergeRequest ?? null)}
              hasMergeRequest={!!session.mergeRequest}
            />
          )}
          {session.container && (
            <WorkerPanel
              sessionId={id}
              title={title}
              container={session.container}
              exitCode={session.exitCode}
              reason={session.reason}
              online={session.online}
            />
          )}
          {can(me, "policy")
            ? <AskSetControl ask={session.ask ?? []} onSave={actions.setAsk} />
            : (
              <section class="panel ask-set" aria-label="Approvals">
                <h2>Ask before</h2>
                <p class="small muted">
                  {session.ask === "all"
                    ? "every tool"
                    : (session.ask ?? []).length
                    ? (session.ask as string[]).join(", ")
                    : "no tool"}
                </p>
              </section>
            )}
          {!session.online && !deleted && can(me, "delete") && !session.container && (
            <button
              type="button"
              class="ghost small delete-session"
              onClick={() => void actions.remove(title)}
            >
              Delete session…
            </button>
          )}
          <BudgetBar
            budget={session.budget}
            edit={can(me, "budget") ? <BudgetForm sessionId={id} budget={session.budget} /> : undefined}
          />
          {atSeq !== null && (
            <p class="small as-at" data-as-at={atSeq}>
              As at event #{atSeq}.{" "}
              <button type="button" class="ghost small" onClick={() => setAtSeq(null)}>Show now</button>
            </p>
          )}
          <UsagePanel conv={panels} />
          <TodoPanel state={todos} />
          <SubagentPanel runs={subagents} />
        </aside>
        {view === "changes" && <ChangesView sessionId={id} refreshKey={settled} />}
        {view === "runs" && <RunsView sessionId={id} now={now} refreshKey={settled} />}
        <main class="conversation" aria-live="off" hidden={view !== "conversation"}>
          {deleted && <p class="notice deleted" role="status">This session was deleted.</p>}
          <div ref={top} class="history-top">
            {hasOlder
              ? (
                <button
                  type="button"
                  class="ghost small"
                  disabled={loadingOlder}
                  onClick={() => void loadOlder(pin.keepPlace)}
                >
                  {loadingOlder ? "Loading older messages…" : "Load older messages"}
                </button>
              )
              : <span class="muted small">Beginning of the session</span>}
          </div>
          {since && dividerAt === -1 && since.events > 0 && <SinceCard since={since} />}
          <WriteBasesContext.Provider value={bases}>
            {blocks.map((b) => (
              <MessageBlockView
                key={b.key}
                rows={b.rows}
                divider={divider && b.rows.some((r) => r.item.key === divider.before) ? divider : null}
                onDecide={onDecide}
              />
            ))}
          </WriteBasesContext.Provider>
          {loose.map((a) => <ApprovalCard key={a.id} approval={a} onDecide={decide} />)}
          {streaming !== null && <StreamingMessage text={streaming} thinking={thinking} />}
          {running && streaming === null && <div class="working" aria-live="polite">Agent is working…</div>}
          {conv.items.length === 0 && streaming === null && <p class="empty muted">No messages yet.</p>}
        </main>
      </div>
      {pin.unseen && (
        <button type="button" class="jump-latest" onClick={pin.jumpToLatest}>
          ↓ New messages
        </button>
      )}
      {can(me, "prompt")
        ? (
          <div class="composer-dock">
            <Composer
              online={session.online}
              resumable={!session.online &&
                (session.container === "stopped" || session.container === "crashed")}
              running={running}
              onSend={actions.send}
              onAbort={actions.abort}
              session={steered}
              commands={conv.commands}
              steeredBy={steeredBy}
            />
          </div>
        )
        : (
          <p class="read-only small muted" data-read-only>
            Signed in as {me?.name ?? "nobody"}{" "}
            ({me?.role ?? "no role"}): you can read this session, not steer it.
          </p>
        )}
    </MeContext.Provider>
  );
}
