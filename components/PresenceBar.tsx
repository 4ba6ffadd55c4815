/**
 * Who else has this session open, live ("alice, bob (typing…)"), and who steers it: take the wheel for a
 * while (others' prompts and aborts then wait unless forced) or release it. The page says it watches the
 * session and whether its composer (`#prompt`) is being typed in: typing counts for 4 s after the last key.
 */
import { useEffect, useState } from "preact/hooks";
import { pageLive } from "../ui/live.ts";
import { useLive } from "../ui/use_live.ts";
import { type SessionPresence, watchersText, wheelText } from "../ui/presence.ts";
import { errorText } from "../ui/api.ts";
import { releaseWheel, takeWheel } from "../ui/rest.ts";
import { useCan } from "../ui/roles.ts";

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
  const act = (call: () => Promise<unknown>) =>
    call().then(
      () => setError(null),
      (e) => setError(errorText(e)),
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
          onClick={() => act(() => takeWheel(sessionId, 30))}
        >
          {wheel ? "Keep steering 30 min" : "Take the wheel (30 min)"}
        </button>
      )}
      {canSteer && wheel && (
        <button
          type="button"
          class="small"
          data-release-wheel
          onClick={() => act(() => releaseWheel(sessionId))}
        >
          Release
        </button>
      )}
      {error && <span class="error" role="alert">{error}</span>}
    </div>
  );
}

/**
 * Who else holds the session's wheel, for the composer: `{holder, text: "alice is steering until 14:05"}`;
 * null when nobody does, it ran out, or it is `me`.
 */
export function useSteeredBy(
  sessionId: string,
  me: string | null,
  now: number,
): { holder: string; text: string } | null {
  const map = useLive((l) => l.presence, new Map<string, SessionPresence>());
  const wheel = map.get(sessionId)?.wheel;
  const text = wheel && wheel.holder !== me ? wheelText(wheel, now) : null;
  return wheel && text ? { holder: wheel.holder, text } : null;
}

/** The list's marker of a held wheel: who steers the session, until when (in its title). */
export function WheelMarker({ sessionId }: { sessionId: string }) {
  const [wheel, setWheel] = useState<{ holder: string; until: number } | null>(null);
  useEffect(() => {
    const topic = pageLive().presence;
    const pick = () => setWheel(topic.get().get(sessionId)?.wheel ?? null);
    pick();
    return topic.subscribe(pick);
  }, [sessionId]);
  const text = wheel && wheelText(wheel, Date.now());
  if (!wheel || !text) return null;
  return (
    <span class="badge wheel" data-wheel-marker={wheel.holder} title={text}>
      ⎈ {wheel.holder}
    </span>
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
