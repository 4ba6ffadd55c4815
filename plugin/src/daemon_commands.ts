/**
 * The daemon's commands for one session, as its link receives them: each is taken once (a prompt per
 * promptId, an abort, model or name change per commandId), handed to the factory run attached or refused when
 * none is, and answered with `command_result`. Kept on the link, which outlives factory runs, so a repeat the
 * daemon sends after a restart or a replica's takeover is recognised by the next run too. Apart from the link,
 * which keeps the socket and the transport's own frames (`welcome`, `policy`, `ack`, `pong`, `error`).
 */
import { FieldMax } from "../../lib/wire.ts";
import { computeChanges } from "./changes.ts";
import type { AgentEventType, DaemonFrame, EventPayload, FrameOf, SessionInfo } from "./frames.ts";
import type { Logger } from "./log.ts";
import { TakenPrompts } from "./prompt_once.ts";

/** What a link hands the daemon's commands to: the factory run attached to it, which owns pi's session. */
export interface Binding {
  /** A prompt for pi, seen for the first time (repeats of a kept prompt never reach here). */
  prompt(f: FrameOf<"prompt">): void;
  abort(f: FrameOf<"abort">): void;
  setModel(f: FrameOf<"set_model">): void;
  setName(f: FrameOf<"set_name">): void;
  /** A person answered one of this run's approval requests. */
  approvalDecision(f: FrameOf<"approval_decision">): void;
  /** A welcome came and the replay is queued: re-send what must be asked again. */
  welcomed?(): void;
  /** The approval ids this run still waits for, announced in `hello` so the daemon can drop the rest. */
  waiting?(): string[];
  /** The daemon sent the session's budget (`welcome`, `policy`): a run it stops is aborted at once. */
  budgetChanged?(): void;
}

/**
 * A frame that may be answered with `command_result`: any daemon frame, including a newer daemon's command
 * this plugin does not know (older daemons send no `commandId`, and are then not answered).
 */
export interface Answerable {
  type?: unknown;
  commandId?: unknown;
  promptId?: unknown;
}

/** The daemon frames that are commands: every type but the transport's own, which the link handles. */
export type CommandFrame = Exclude<DaemonFrame, { type: "welcome" | "policy" | "ack" | "pong" | "error" }>;

/** What the commands answer through: the session's link. */
export interface CommandLink {
  /** The session as last announced: `changes` runs git in its cwd. */
  readonly info: Pick<SessionInfo, "cwd">;
  emit<T extends AgentEventType>(type: T, payload: EventPayload<T>, size?: number): number;
  emitNow<T extends AgentEventType>(type: T, payload: EventPayload<T>, size?: number): number;
}

/** Why a command found no factory run to take it. */
const NO_RUN = "no live pi session";

/** About how many characters an answer takes in the buffer. */
function byteSize(changes: object): number {
  return JSON.stringify(changes).length;
}

/** One session's commands: who takes each, which were taken already, and their answers. */
export class DaemonCommands {
  #link: CommandLink;
  #log: Logger;
  /** promptIds already taken: the daemon may send a kept prompt again (feature `prompt_once`). */
  #prompts = new TakenPrompts();
  /**
   * The commandIds of aborts, model and name changes taken, kept the way promptIds are: a daemon replica that
   * takes a session over sends again what the old one may have written just before it died, and a repeated
   * abort would stop whatever runs by then.
   */
  #commands = new TakenPrompts();

  constructor(link: CommandLink, log: Logger) {
    this.#link = link;
    this.#log = log;
  }

  /** Hand a command to `run`, the factory run attached, or answer it at once when there is none. */
  dispatch(f: CommandFrame, run: Binding | null): void {
    switch (f.type) {
      case "prompt":
        if (!this.#firstTime(f)) return;
        if (run) return run.prompt(f);
        this.#log(`prompt ${f.promptId} dropped: ${NO_RUN}`);
        return this.commandResult(f, NO_RUN);
      case "abort":
        if (!this.#firstCommand(f)) return;
        return run ? run.abort(f) : this.commandResult(f, NO_RUN);
      case "set_model":
        if (!this.#firstCommand(f)) return;
        return run ? run.setModel(f) : this.commandResult(f, NO_RUN);
      case "set_name":
        if (!this.#firstCommand(f)) return;
        return run ? run.setName(f) : this.commandResult(f, NO_RUN);
      case "changes":
        // Needs no pi run: git reads the session's cwd, which the link knows.
        return this.#onChanges(f);
      case "approval_decision":
        // Nothing to answer without a run: the request is sent again, and decided again, after a restart.
        return run?.approvalDecision(f);
      default: {
        // Every type of the protocol is handled above or by the link (a new one fails the type check here); at
        // run time a newer daemon may still send a command this plugin does not know: it is refused, not left
        // waiting.
        const unknown: never = f;
        const g = unknown as Answerable;
        return this.commandResult(g, run ? `unknown command ${JSON.stringify(String(g.type))}` : NO_RUN);
      }
    }
  }

  /**
   * The attached run ended: a prompt it took and never answered may run again when repeated. The run refuses
   * every prompt it still queued (which forgets it), so this only guards against one left without an answer.
   */
  forgetQueuedPrompts(): void {
    this.#prompts.forgetUnanswered();
  }

  /** Answer a daemon command that carried a `commandId` (older daemons send none: then nothing). */
  commandResult(f: Answerable, error?: string): void {
    if (f.type === "prompt") this.#prompts.answered(f.promptId, !error);
    else if (f.type === "abort" || f.type === "set_model" || f.type === "set_name") {
      this.#commands.answered(f.commandId, !error);
    }
    if (typeof f.commandId !== "string" || !f.commandId) return;
    const cut = error ? { error: error.slice(0, FieldMax.commandError) } : {};
    this.#link.emit("command_result", { commandId: f.commandId, ok: !error, ...cut });
  }

  /** A prompt seen before is not run again: answered again once the first was answered, else ignored. */
  #firstTime(f: FrameOf<"prompt">): boolean {
    const verdict = this.#prompts.take(f.promptId);
    if (verdict.run) return true;
    this.#log(`prompt ${f.promptId} came again: not run twice`);
    if (verdict.answered) this.commandResult(f);
    return false;
  }

  /** An abort, model or name change seen before is not run again: answered again once the first was. */
  #firstCommand(f: FrameOf<"abort" | "set_model" | "set_name">): boolean {
    const verdict = this.#commands.take(f.commandId);
    if (verdict.run) return true;
    this.#log(`${f.type} ${f.commandId} came again: not run twice`);
    if (verdict.answered) this.commandResult(f);
    return false;
  }

  /** Answer `changes` with what changed in pi's cwd (or git's error), in one `command_result`. */
  #onChanges(f: FrameOf<"changes">): void {
    const scope = f.scope === "uncommitted" ? "uncommitted" : "all";
    const path = typeof f.path === "string" ? f.path : undefined;
    computeChanges(this.#link.info.cwd, scope, path).then(
      (changes) => {
        if (typeof f.commandId !== "string" || !f.commandId) return;
        // The answer's budget keeps it within one frame: its size is known, the buffer counts it.
        this.#link.emitNow(
          "command_result",
          { commandId: f.commandId, ok: true, changes },
          1000 + byteSize(changes),
        );
      },
      (err) => this.commandResult(f, `git: ${(err as Error)?.message ?? err}`),
    );
  }
}
