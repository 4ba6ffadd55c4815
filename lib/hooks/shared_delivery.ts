/**
 * One hand-over of a kept hook prompt with replicas (shared_kept_prompts.ts decides when to try): as
 * prompt_delivery.ts does on a single daemon, except that the replica trying need not hold the session. It
 * sends through the command queue (`Sessions.prompt`), hears the answer in its copy of the log, and reads
 * what the holder's plugin supports from the session row (`PluginRows`, written by the holder after its
 * welcome). Every write names the claimant's lease: a lost lease ends the try, the prompt is someone else's.
 */
import { Feature } from "../protocol.ts";
import type { HookPromptLog, PendingPrompt, PromptLease } from "../storage/hook_prompt_log.ts";
import type { Delivered, DeliveryDeps } from "./prompt_delivery.ts";
import { answeredInLog, commandAnswer, pause } from "./session_waits.ts";
import { sendKeptPrompt } from "./send.ts";
import { HelloWaits, listedFeatures } from "./plugin_hellos.ts";

/** What the session rows say of a session's plugin (the daemon's `Replica`). */
export interface PluginRows {
  /** Record what the plugin of a session held here supports. */
  setFeatures(sessionId: string, features: string[]): Promise<void>;
  /** What the holder's plugin supports (null: not known yet), and the holder's epoch. */
  features(sessionId: string): Promise<{ features: string[] | null; epoch: number } | null>;
}

/** One prompt being worked on by this replica: its lease, and what a renewal tells the wait for its answer. */
export interface Work {
  lease: PromptLease;
  /** Aborted when the lease is lost or at shutdown. */
  lost: AbortController;
  /** Called with the holder's epoch at each renewal while an answer is awaited. */
  onEpoch: ((epoch: number) => void) | null;
}

/** How often a plugin's features are looked for while its holder has not written them yet. */
const FEATURES_POLL_MS = 200;

/** The delivery side of one replica's kept prompts. */
export class SharedDelivery {
  #deps: DeliveryDeps;
  #log: HookPromptLog;
  #rows: PluginRows;
  /** Told when a session's plugin says hello on this replica. */
  #hellos = new HelloWaits();

  constructor(deps: DeliveryDeps, log: HookPromptLog, rows: PluginRows) {
    this.#deps = deps;
    this.#log = log;
    this.#rows = rows;
  }

  /**
   * A plugin said hello here: its features go on the session row (for whichever replica delivers), and a
   * prompt this replica sent to an older socket goes again.
   * @returns the write of the features
   */
  pluginHello(sessionId: string, features: unknown): Promise<void> {
    const listed = listedFeatures(features);
    this.#hellos.hello(sessionId);
    return this.#rows.setFeatures(sessionId, listed);
  }

  /**
   * One try, as `PromptDelivery.deliver` on a single daemon, with the plugin's features read from the session
   * row and every write naming the lease (a lost lease ends the try as `"done"`: the prompt is not ours).
   */
  async deliver(p: PendingPrompt, work: Work): Promise<Delivered> {
    const { lease, lost } = work;
    const session = this.#deps.sessions.get(p.sessionId);
    if (!session?.online || (p.waitIdle && session.state !== "idle")) return "offline";
    const plugin = await this.#pluginFeatures(p.sessionId, lost.signal);
    if (lost.signal.aborted) return "done";
    if (!plugin) return "offline";
    if (!plugin.features.includes(Feature.promptOnce)) {
      // An older plugin never answers: the row goes as the frame is sent (kept again if the send throws).
      if (!await this.#log.answered(lease)) return "done";
      try {
        sendKeptPrompt(this.#deps, p);
      } catch (error) {
        await this.#log.keep(p);
        throw error;
      }
      return "done";
    }
    if (await this.takenBefore(p, lease)) return "done";
    if (p.sentAfter === null) {
      p.sentAfter = this.#deps.store.lastSeq(p.sessionId);
      if (!await this.#log.markSent(lease, p.sentAfter)) return "done";
    }
    const answer = commandAnswer(this.#deps.hub, p.sessionId, p.id, lost.signal, (again) => {
      // A hello here, or a new holder epoch seen at a renewal: the socket that got the frame may be gone.
      const forget = this.#hellos.on(p.sessionId, again);
      work.onEpoch = (epoch) => epoch !== plugin.epoch && again();
      return () => {
        forget();
        work.onEpoch = null;
      };
    });
    try {
      sendKeptPrompt(this.#deps, p);
    } catch (error) {
      answer.cancel();
      throw error;
    }
    const a = await answer.promise;
    if (a === "again") return "again";
    if (a === "stopped") return "done";
    if (!a.ok) {
      const reason = a.error ?? "no reason";
      console.warn(`lvmh: session ${p.sessionId} refused a hook prompt (tried again): ${reason}`);
      return { refused: reason };
    }
    await this.#log.answered(lease);
    return "done";
  }

  /** The holder's plugin's features once it wrote them; null when the session went offline first. */
  async #pluginFeatures(
    sessionId: string,
    signal: AbortSignal,
  ): Promise<{ features: string[]; epoch: number } | null> {
    for (;;) {
      const row = await this.#rows.features(sessionId);
      if (row?.features) return { features: row.features, epoch: row.epoch };
      if (signal.aborted || !this.#deps.sessions.get(sessionId)?.online) return null;
      await pause(FEATURES_POLL_MS, signal);
    }
  }

  /** True (and the row dropped) when this replica's copy of the log holds the plugin's `ok` answer to `p`. */
  async takenBefore(p: PendingPrompt, lease: PromptLease): Promise<boolean> {
    if (!answeredInLog(this.#deps.store, p.sessionId, p.id, p.sentAfter ?? 0)) return false;
    await this.#log.answered(lease);
    console.log(`lvmh: a hook prompt for session ${p.sessionId} was taken before: not sent again`);
    return true;
  }
}
