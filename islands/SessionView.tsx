/**
 * The session page: the conversation (server-rendered from the latest page of events, then live), streaming
 * deltas, older history on scroll, the side panels, and the composer. On every (re)connect it subscribes with
 * `after` = the last seq it holds, so the daemon sends exactly what is missing; the reducer drops any replay.
 */
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import type { DeliverAs, SessionSummary, StoredEvent } from "../lib/protocol.ts";
import { Composer } from "../components/Composer.tsx";
import { MessageItem, StreamingMessage } from "../components/Messages.tsx";
import { SessionFacts, SubagentPanel, TodoPanel, UsagePanel } from "../components/SidePanels.tsx";
import { SignInForm } from "../components/SignInForm.tsx";
import { api, ApiError, credentialsAccepted, SignInRequired, socketUrl } from "../lib/ui/api.ts";
import {
  applyEvents,
  buildConversation,
  mergeEvents,
  prependEvents,
  streamingText,
  streamingThinking,
} from "../lib/ui/conversation.ts";
import { deriveSubagents, deriveTodos } from "../lib/ui/derive.ts";
import { connectLive, type LiveSocket } from "../lib/ui/live_socket.ts";
import { onRetryRequest, publishStatus } from "../lib/ui/status_bus.ts";
import { askPermission, notifySettled, setWatched, watchedSessions } from "../lib/ui/notify.ts";

interface Props {
  session: SessionSummary;
  /** The latest page of persisted events, ascending. */
  events: StoredEvent[];
  hasOlder: boolean;
  now: number;
}

/** Events fetched per scroll-up page. */
const OLDER_PAGE = 300;

export default function SessionView(props: Props) {
  const id = props.session.id;
  const [session, setSession] = useState(props.session);
  const [conv, setConv] = useState(() => buildConversation(props.events));
  const [hasOlder, setHasOlder] = useState(props.hasOlder);
  const [loadingOlder, setLoadingOlder] = useState(false);
  const [now, setNow] = useState(props.now);
  const [needSignIn, setNeedSignIn] = useState(false);
  const [watched, setWatchedState] = useState(false);
  /** The session left the daemon's list: deleted here or in another tab. */
  const [deleted, setDeleted] = useState(false);
  const convRef = useRef(conv);
  convRef.current = conv;
  const live = useRef<LiveSocket | null>(null);
  const top = useRef<HTMLDivElement>(null);
  const anchor = useRef<{ height: number; y: number } | null>(null);
  const stick = useRef(true);
  /** New content arrived while the reader was scrolled up: offer a jump to the latest. */
  const [unseen, setUnseen] = useState(false);

  useEffect(() => {
    setNow(Date.now());
    setWatchedState(watchedSessions().has(id));
    const tick = setInterval(() => setNow(Date.now()), 30_000);
    live.current = connectLive({
      url: socketUrl,
      onOpen(send) {
        send({ type: "subscribe", sessionId: id, after: convRef.current.lastSeq });
      },
      onStatus(s) {
        publishStatus(s);
        // Refused twice in a row: maybe the daemon's token changed. Only the REST API can tell a 401 apart.
        if (s.state === "retrying" && s.attempt >= 2) {
          credentialsAccepted().then((ok) => ok || setNeedSignIn(true));
        }
      },
      onFrame(frame) {
        if (frame.type === "session_list") {
          const mine = frame.sessions.find((s) => s.id === id);
          if (mine) setSession(mine);
          setDeleted(!mine);
        } else if (frame.type === "events" && frame.sessionId === id) {
          // The frame continues from `after`: if that is past what we hold, fetch the gap (merged in order).
          const persisted = frame.events.some((e) => e.type !== "message_update");
          if (persisted && frame.after > convRef.current.lastSeq) void fillGap(convRef.current.lastSeq);
          setConv((c) => applyEvents(c, frame.events));
          if (frame.events.some((e) => e.type === "agent_settled" && e.seq > convRef.current.lastSeq)) {
            notifySettled(id, props.session.name || id);
          }
        }
      },
    });
    const online = () => live.current?.reconnectNow();
    addEventListener("online", online);
    const offRetry = onRetryRequest(online);
    const onScroll = () => {
      const el = document.scrollingElement ?? document.documentElement;
      stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 120;
      if (stick.current) setUnseen(false);
    };
    addEventListener("scroll", onScroll, { passive: true });
    // Start at the newest message.
    scrollTo(0, document.documentElement.scrollHeight);
    return () => {
      clearInterval(tick);
      removeEventListener("online", online);
      offRetry();
      removeEventListener("scroll", onScroll);
      live.current?.close();
    };
  }, []);

  // Keep the view pinned: at the bottom while following, at the same message after older ones were added.
  useLayoutEffect(() => {
    const el = document.documentElement;
    if (anchor.current) {
      scrollTo(0, anchor.current.y + el.scrollHeight - anchor.current.height);
      anchor.current = null;
    } else if (stick.current) {
      scrollTo(0, el.scrollHeight);
    } else {
      setUnseen(true);
    }
  }, [conv]);

  async function fillGap(after: number) {
    try {
      const missing = await api<StoredEvent[]>(
        `/api/sessions/${encodeURIComponent(id)}/events?after=${after}&limit=1000`,
      );
      setConv((c) => mergeEvents(c, missing));
    } catch (e) {
      if (e instanceof SignInRequired) setNeedSignIn(true);
    }
  }

  async function loadOlder() {
    if (loadingOlder || !hasOlder) return;
    setLoadingOlder(true);
    try {
      const before = convRef.current.firstSeq || convRef.current.lastSeq + 1;
      const older = await api<StoredEvent[]>(
        `/api/sessions/${encodeURIComponent(id)}/events?before=${before}&limit=${OLDER_PAGE}`,
      );
      if (older.length < OLDER_PAGE) setHasOlder(false);
      anchor.current = { height: document.documentElement.scrollHeight, y: scrollY };
      setConv((c) => prependEvents(c, older));
    } catch (e) {
      if (e instanceof SignInRequired) setNeedSignIn(true);
    } finally {
      setLoadingOlder(false);
    }
  }

  // Load older history when the top of the conversation scrolls into view.
  useEffect(() => {
    if (!hasOlder || !top.current) return;
    const io = new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && loadOlder());
    io.observe(top.current);
    return () => io.disconnect();
  }, [hasOlder, loadingOlder]);

  async function post(path: string, body?: unknown): Promise<string | null> {
    try {
      await api(`/api/sessions/${encodeURIComponent(id)}/${path}`, {
        method: "POST",
        body: JSON.stringify(body ?? {}),
      });
      return null;
    } catch (e) {
      if (e instanceof SignInRequired) {
        setNeedSignIn(true);
        return "Sign in again to send.";
      }
      if (e instanceof ApiError && e.status === 409) setSession((s) => ({ ...s, online: false }));
      return (e as Error).message;
    }
  }

  async function deleteSession() {
    if (!confirm(`Delete "${title}" and its whole history? This cannot be undone.`)) return;
    try {
      await api(`/api/sessions/${encodeURIComponent(id)}`, { method: "DELETE" });
      location.assign("/");
    } catch (e) {
      if (e instanceof SignInRequired) return setNeedSignIn(true);
      if (e instanceof ApiError && e.status === 409) setSession((s) => ({ ...s, online: true }));
      alert(`Not deleted: ${(e as Error).message}`);
    }
  }

  async function toggleWatch() {
    const on = !watched;
    if (on && !await askPermission()) {
      alert("Notifications are blocked for this site in the browser's settings.");
      return;
    }
    setWatchedState(setWatched(id, on));
  }

  const calls = useMemo(() => conv.toolOrder.map((t) => conv.tools[t]), [conv.tools, conv.toolOrder]);
  const todos = useMemo(() => deriveTodos(calls), [calls]);
  const subagents = useMemo(() => deriveSubagents(calls), [calls]);
  const running = session.online && session.state === "running";
  const streaming = conv.streaming ? streamingText(conv.streaming) : null;
  const thinking = streamingThinking(conv.streaming);
  const title = session.name || id;

  // The tab says what the agent is doing, for a page kept open in the background.
  useEffect(() => {
    const mark = !session.online ? "○" : running ? "●" : "✓";
    document.title = `${mark} ${title} · lvmh`;
  }, [running, session.online, title]);

  return (
    <>
      {needSignIn && (
        <div class="overlay">
          <SignInForm message="The daemon no longer accepts this browser's token." />
        </div>
      )}
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
          {!session.online && !deleted && (
            <button
              type="button"
              class="ghost small delete-session"
              onClick={() => void deleteSession()}
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
                  onClick={() => void loadOlder()}
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
            />
          ))}
          {streaming !== null && <StreamingMessage text={streaming} thinking={thinking} />}
          {running && streaming === null && <div class="working" aria-live="polite">Agent is working…</div>}
          {conv.items.length === 0 && streaming === null && <p class="empty muted">No messages yet.</p>}
        </main>
      </div>
      {unseen && (
        <button
          type="button"
          class="jump-latest"
          onClick={() => {
            scrollTo({ top: document.documentElement.scrollHeight, behavior: "smooth" });
            setUnseen(false);
          }}
        >
          ↓ New messages
        </button>
      )}
      <div class="composer-dock">
        <Composer
          online={session.online}
          running={running}
          onSend={(message: string, deliverAs: DeliverAs) => post("prompt", { message, deliverAs })}
          onAbort={() => post("abort")}
        />
      </div>
    </>
  );
}
