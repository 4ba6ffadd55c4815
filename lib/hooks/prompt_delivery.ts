/**
 * One hand-over of a kept hook prompt to its session's plugin, exactly once, and what that needs to know of the
 * plugins: the features each listed in its latest `hello`, and who waits for a session's next hello. Kept
 * apart from `KeptPrompts` (kept_prompts.ts), which decides when to try (spawn, wait for the session, try a
 * refusal again): this decides how one try goes and when the kept row may go.
 */
import type { Audit } from "../audit.ts";
import type { Hub } from "../hub.ts";
import type { Sessions } from "../sessions.ts";
import type { Store } from "../store.ts";
import { Feature } from "../protocol.ts";
import type { HookStore, PendingPrompt } from "./hook_store.ts";
import { answeredInLog, commandAnswer } from "./session_waits.ts";
import { sendKeptPrompt } from "./send.ts";
import { HelloWaits, listedFeatures } from "./plugin_hellos.ts";

/** The daemon parts a delivery uses (read at each use, so later swaps count). */
export interface DeliveryDeps {
  store: Store;
  sessions: Sessions;
  hub: Hub;
  audit: Audit;
}

/** How one delivery attempt ended. */
export type Delivered =
  | "done" // taken (or shutdown: the row stays for the next start)
  | "offline" // not sent: wait for the session again
  | "again" // sent, then a new socket came before its answer: send again
  | { refused: string };

/** The delivery side of one daemon run's kept prompts. */
export class PromptDelivery {
  #deps: DeliveryDeps;
  #store: HookStore;
  /** Aborted at shutdown: an answer still awaited ends as `"stopped"`. */
  #stop: AbortSignal;
  /** The optional features each session's plugin listed in its latest `hello`. */
  #features = new Map<string, ReadonlySet<string>>();
  /** Told when a session's plugin says hello (a new socket: a prompt sent to the old one may be lost). */
  #hellos = new HelloWaits();

  constructor(deps: DeliveryDeps, store: HookStore, stop: AbortSignal) {
    this.#deps = deps;
    this.#store = store;
    this.#stop = stop;
  }

  /**
   * A plugin said hello (its welcome is sent): what it supports, and a kept prompt sent to an earlier socket of
   * the session, still unanswered, goes again (the plugin takes a promptId once).
   */
  pluginHello(sessionId: string, features: unknown): void {
    const listed = listedFeatures(features);
    this.#features.set(sessionId, new Set(listed));
    this.#hellos.hello(sessionId);
  }

  /**
   * Send a kept prompt if its session is online. To a plugin with feature `prompt_once` the row stays until
   * an `ok` `command_result` for the promptId is stored, so a kill before that leaves it for the next start,
   * and a new socket before that gets it again (the plugin takes it once); the event log is read first, so a
   * prompt whose answer was stored is dropped instead. To an older plugin, which never answers, the row is
   * deleted and the frame sent in one synchronous step: a kill either leaves the row (sent after the restart)
   * or finds it gone with the frame queued (lost if the kill came before it left).
   * @throws what `sessions.prompt` threw; the prompt is kept for the next start.
   */
  async deliver(p: PendingPrompt): Promise<Delivered> {
    const session = this.#deps.sessions.get(p.sessionId);
    // A run started since the wait ended: wait for its end again.
    if (!session?.online || (p.waitIdle && session.state !== "idle")) return "offline";
    if (!this.#features.get(p.sessionId)?.has(Feature.promptOnce)) {
      if (!this.#store.takePrompt(p.id)) return "done";
      try {
        sendKeptPrompt(this.#deps, p);
        return "done";
      } catch (error) {
        this.#store.addPrompt(p);
        throw error;
      }
    }
    if (this.takenBefore(p)) return "done";
    if (p.sentAfter === null) {
      p.sentAfter = this.#deps.store.lastSeq(p.sessionId);
      this.#store.markSent(p.id, p.sentAfter);
    }
    const answer = commandAnswer(
      this.#deps.hub,
      p.sessionId,
      p.id,
      this.#stop,
      (again) => this.#hellos.on(p.sessionId, again),
    );
    try {
      sendKeptPrompt(this.#deps, p);
    } catch (error) {
      answer.cancel();
      throw error;
    }
    const a = await answer.promise;
    if (a === "again") return "again";
    if (a === "stopped") return "done"; // shutdown: the row stays for the next start
    if (!a.ok) {
      const reason = a.error ?? "no reason";
      console.warn(`lvmh: session ${p.sessionId} refused a hook prompt (tried again): ${reason}`);
      return { refused: reason };
    }
    this.#store.takePrompt(p.id);
    return "done";
  }

  /** True (and the row dropped) when the session's event log holds the plugin's `ok` answer to `p`. */
  takenBefore(p: PendingPrompt): boolean {
    if (!answeredInLog(this.#deps.store, p.sessionId, p.id, p.sentAfter ?? 0)) return false;
    this.#store.takePrompt(p.id);
    console.log(
      `lvmh: a hook prompt for session ${p.sessionId} was taken before the restart: not sent again`,
    );
    return true;
  }
}
