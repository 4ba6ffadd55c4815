/**
 * Timer helpers every part of the plugin uses. They import nothing, so any module may use them.
 */

type Timer = ReturnType<typeof setTimeout>;

/** Keep a timer from holding pi's process open (pi's print mode exits when its event loop drains). */
export function unref<T extends Timer | ReturnType<typeof setInterval>>(
  timer: T,
): T {
  if (typeof timer === "object" && timer !== null) {
    (timer as { unref?: () => void }).unref?.();
  } else {
    const deno = (globalThis as { Deno?: { unrefTimer?: (id: number) => void } }).Deno;
    if (typeof deno?.unrefTimer === "function") {
      deno.unrefTimer(timer as unknown as number);
    }
  }
  return timer;
}

/** Run `f` after the current handler returns, before any timer (setImmediate where there is one). */
export const later: (f: () => void) => void = typeof setImmediate === "function"
  ? (f) => void setImmediate(f)
  : (f) => void setTimeout(f, 0);
