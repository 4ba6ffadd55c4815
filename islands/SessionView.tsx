/**
 * The session page: the conversation (server-rendered from the latest page of events, then live), streaming
 * deltas, older history on scroll, the side panels, and the composer. Each concern is a hook in `lib/ui/`:
 * the summary row, the conversation, the scroll pin, notifications, and the actions.
 */
import { useEffect, useMemo, useRef } from "preact/hooks";
import type { SessionSummary } from "../lib/protocol.ts";
import { ApprovalCard } from "../components/ApprovalCard.tsx";
import { AskSetControl } from "../components/AskSetControl.tsx";
import { Composer } from "../components/Composer.tsx";
import { MessageItem, StreamingMessage } from "../components/Messages.tsx";
import { SessionFacts, SubagentPanel, TodoPanel, UsagePanel } from "../components/SidePanels.tsx";
import { streamingText, streamingThinking } from "../lib/ui/conversation.ts";
import { deriveSubagents, deriveTodos } from "../lib/ui/derive.ts";
import type { UiEvent } from "../lib/ui/wire.ts";
import { useApprovals } from "../lib/ui/use_approvals.ts";
import { useApprovalKeys } from "../lib/ui/use_approval_keys.ts";
import { useClock } from "../lib/ui/use_clock.ts";
import { useConversation } from "../lib/ui/use_conversation.ts";
import { useScrollPin, useWhenVisible } from "../lib/ui/use_scroll_pin.ts";
import { sessionActions } from "../lib/ui/use_session_actions.ts";
import { useSessionSummary } from "../lib/ui/use_session_summary.ts";
import { useWatch } from "../lib/ui/use_watch.ts";

interface Props {
  session: SessionSummary;
  /** The latest page of persisted events, ascending. */
  events: UiEvent[];
  hasOlder: boolean;
  now: number;
}

export default function SessionView(props: Props) {
  const id = props.session.id;
  const now = useClock(props.now);
  const { session, deleted, patch } = useSessionSummary(props.session);
  const title = session.name || id;
  const { conv, hasOlder, loadingOlder, loadOlder } = useConversation(
    id,
    props.events,
    props.hasOlder,
    title,
  );
  const pin = useScrollPin(conv);
  const top = useRef<HTMLDivElement>(null);
  useWhenVisible(top, hasOlder, () => void loadOlder(pin.keepPlace), [loadingOlder]);
  const [watched, toggleWatch] = useWatch(id);
  const actions = useMemo(() => sessionActions(id, patch), [id]);
  const { views, decide } = useApprovals(id, conv);
  const pending = useMemo(() => [...views.values()].filter((a) => a.state === "pending"), [views]);
  useApprovalKeys(pending, decide);
  // Approvals whose call is in no message held (older history, or asked before its message arrived).
  const loose = useMemo(
    () =>
      [...views.values()].filter((a) =>
        !conv.tools[a.toolCallId]?.inMessage && (a.state === "pending" || conv.approvals[a.id])
      ),
    [views, conv.tools],
  );

  const calls = useMemo(() => conv.toolOrder.map((t) => conv.tools[t]), [conv.tools, conv.toolOrder]);
  const todos = useMemo(() => deriveTodos(calls), [calls]);
  const subagents = useMemo(() => deriveSubagents(calls), [calls]);
  const running = session.online && session.state === "running";
  const streaming = conv.streaming ? streamingText(conv.streaming) : null;
  const thinking = streamingThinking(conv.streaming);

  // The tab says what the agent is doing, for a page kept open in the background.
  useEffect(() => {
    const mark = !session.online ? "○" : running ? "●" : "✓";
    document.title = `${mark} ${title} · lvmh`;
  }, [running, session.online, title]);

  return (
    <>
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
          <SessionFacts s={session} now={now} />
          <AskSetControl ask={session.ask ?? []} onSave={actions.setAsk} />
          {!session.online && !deleted && (
            <button
              type="button"
              class="ghost small delete-session"
              onClick={() => void actions.remove(title)}
            >
              Delete session…
            </button>
          )}
          <UsagePanel conv={conv} />
          <TodoPanel state={todos} />
          <SubagentPanel runs={subagents} />
        </aside>
        <main class="conversation" aria-live="off">
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
          {conv.items.map((item) => (
            <MessageItem
              key={item.key}
              item={item}
              calls={item.kind === "assistant"
                ? item.toolCalls.map((t) => conv.tools[t]).filter(Boolean)
                : []}
              approvals={item.kind === "assistant"
                ? item.toolCalls.map((t) => views.get(conv.tools[t]?.approvalId ?? "") ?? null)
                : []}
              onDecide={decide}
            />
          ))}
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
      <div class="composer-dock">
        <Composer online={session.online} running={running} onSend={actions.send} onAbort={actions.abort} />
      </div>
    </>
  );
}
