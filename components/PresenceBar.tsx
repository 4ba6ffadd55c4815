/**
 * Who else has this session open, live ("alice, bob (typing…)"), and who steers it: take the wheel for a
 * while (others' prompts and aborts then wait unless forced) or release it. The page says it watches the
 * session and whether its composer (`#prompt`) is being typed in: typing counts for 4 s after the last key.
 */
import { useEffect, useState } from "preact/hooks";
import { pageLive } from "../ui/live.ts";
import { useLive } from "../ui/use_live.ts";
import { type SessionPresence, watchersText, wheelText } from "../ui/presence.ts";
import { api } from "../ui/api.ts";
import { useCan } from "../ui/roles.ts";
import type { Wheel } from "../lib/protocol.ts";

/** How long after the last keystroke the composer still counts as being typed in. */
const TYPING_MS = 4000;

/** This page watches `sessionId`, typing while its composer changes. */
function useWatch(sessionId: string): void {
  useEffect(() => {
    const live = pageLive();
    let typing = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const leave = live.watch(sessionId, false);
    const set = (t: boolean) => {
      if (t !== typing) live.watch(sessionId, typing = t);
    };
    const onInput = (e: Event) => {
      if ((e.target as HTMLElement | null)?.id !== "prompt") return;
      const empty = !(e.target as HTMLTextAreaElement).value;
      clearTimeout(timer);
      set(!empty);
      if (!empty) timer = setTimeout(() => set(false), TYPING_MS);
    };
    document.addEventListener("input", onInput);
    return () => {
      clearTimeout(timer);
      document.removeEventListener("input", onInput);
      leave();
    };
  }, [sessionId]);
}

export function PresenceBar({ sessionId, me, now }: { sessionId: string; me: string | null; now: number }) {
  useWatch(sessionId);
  const map = useLive((l) => l.presence, new Map<string, SessionPresence>());
  const canSteer = useCan("prompt");
  const [error, setError] = useState<string | null>(null);
  const p = map.get(sessionId);
  const others = (p?.watchers ?? []).filter((w) => w.name !== me);
  const wheel = p?.wheel && wheelText(p.wheel, now) ? p.wheel : null;
  const act = (init: RequestInit) =>
    api<Wheel | { ok: true }>(`/api/sessions/${encodeURIComponent(sessionId)}/wheel`, init).then(
      () => setError(null),
      (e) => setError(String((e as Error).message ?? e)),
    );
  return (
    <div class="presence" data-presence>
      <span class="watchers" data-watchers={others.length}>
        {others.length ? `Also here: ${watchersText(others)}` : "Nobody else is here"}
      </span>
      {wheel && (
        <span class={`badge wheel ${wheel.holder === me ? "mine" : ""}`} data-wheel={wheel.holder}>
          {wheel.holder === me ? "You are steering" : wheelText(wheel, now)}
        </span>
      )}
      {canSteer && (!wheel || wheel.holder === me) && (
        <button
          type="button"
          class="small"
          data-take-wheel
          onClick={() => act({ method: "POST", body: JSON.stringify({ minutes: 30 }) })}
        >
          {wheel ? "Keep steering 30 min" : "Take the wheel (30 min)"}
        </button>
      )}
      {canSteer && wheel && (
        <button
          type="button"
          class="small"
          data-release-wheel
          onClick={() => act({ method: "DELETE" })}
        >
          Release
        </button>
      )}
      {error && <span class="error" role="alert">{error}</span>}
    </div>
  );
}

/** The list's count of people who have a session open; nothing when nobody has. */
export function PresenceCount({ sessionId }: { sessionId: string }) {
  const [count, setCount] = useState(0);
  useEffect(() => {
    const topic = pageLive().presence;
    const pick = () => setCount(topic.get().get(sessionId)?.watchers.length ?? 0);
    pick();
    return topic.subscribe(pick);
  }, [sessionId]);
  if (!count) return null;
  return (
    <span class="badge watching" data-watching={count} title={`${count} watching`}>
      👁 {count}
    </span>
  );
}
