/**
 * An in-process stand-in for pi's extension host, to drive the plugin's factory directly (unit tests, the
 * overflow test with more than 10,000 events, and the benchmark). The real pi is in `pi.ts`.
 */

// pi hands handlers its own ctx; the fake's is a loose record, so handlers take it untyped.
// deno-lint-ignore no-explicit-any
type Handler = (event: Record<string, unknown>, ctx: any) => unknown;

/** What a test can do with a fake pi host. */
export interface FakePi {
  /** The object handed to the extension factory. */
  pi: {
    on(name: string, h: Handler): unknown;
    sendUserMessage(message: string, options?: unknown): void;
  };
  ctx: Record<string, unknown>;
  /** `sendUserMessage` calls, in order. */
  sent: { message: string; options?: { deliverAs?: string } }[];
  aborts: number;
  idleChecks: number;
  idle: boolean;
  name: string | null;
  model: { id: string; provider: string };
  handlerCount(): number;
  /** Call every handler for `name` as pi does (awaited in order); returns what the last one returned. */
  fire(name: string, event?: Record<string, unknown>): Promise<unknown>;
  /** Call handlers synchronously and return the time spent inside them, in ms. */
  fireTimed(name: string, event?: Record<string, unknown>): number;
}

/**
 * Make a fake pi host for session `sessionId`.
 * @param native true to behave like pi 1.6.0 (`pi.on` returns an unsubscribe function, agent_settled exists).
 */
export function fakePi(
  sessionId: string,
  options: { cwd?: string; native?: boolean } = {},
): FakePi {
  const handlers = new Map<string, Handler[]>();
  const cwd = options.cwd ?? "/tmp";
  const started = new Date().toISOString();
  const fake: FakePi = {
    pi: {
      on(name, h) {
        handlers.set(name, [...handlers.get(name) ?? [], h]);
        return options.native ? () => {} : undefined;
      },
      sendUserMessage(message, opts) {
        fake.sent.push({
          message,
          options: opts as { deliverAs?: string } | undefined,
        });
      },
    },
    ctx: {},
    sent: [],
    aborts: 0,
    idleChecks: 0,
    idle: true,
    name: null,
    model: { id: "fake-model", provider: "fake" },
    handlerCount: () => [...handlers.values()].reduce((n, l) => n + l.length, 0),
    async fire(name, event = {}) {
      let out;
      for (const h of handlers.get(name) ?? []) {
        out = await h({ type: name, ...event }, fake.ctx);
      }
      return out;
    },
    fireTimed(name, event = {}) {
      const list = handlers.get(name) ?? [];
      const e = { type: name, ...event };
      const t0 = performance.now();
      for (const h of list) h(e, fake.ctx);
      return performance.now() - t0;
    },
  };
  fake.ctx = {
    cwd,
    get model() {
      return fake.model;
    },
    sessionManager: {
      getSessionId: () => sessionId,
      getSessionName: () => fake.name ?? undefined,
      getHeader: () => ({
        type: "session",
        id: sessionId,
        timestamp: started,
        cwd,
      }),
      getCwd: () => cwd,
    },
    isIdle: () => {
      fake.idleChecks++;
      return fake.idle;
    },
    hasPendingMessages: () => false,
    abort: () => {
      fake.aborts++;
    },
  };
  return fake;
}
