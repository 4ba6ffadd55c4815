/**
 * Run `fn` at most once per `intervalMs`: the first call runs at once, later calls inside the window
 * collapse into one trailing run, so the last change is never lost. Measured on the monotonic clock from the
 * end of the previous run (a slow run never squeezes the next one closer to it), and a timer that fires
 * early (they may, by a fraction of a millisecond) waits out the rest of the window.
 */
export function throttle(fn: () => void, intervalMs: number): (() => void) & { cancel(): void } {
  let last = -Infinity;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const run = () => {
    timer = undefined;
    const wait = last + intervalMs - performance.now();
    if (wait > 0) {
      timer = setTimeout(run, wait);
      return;
    }
    try {
      fn();
    } finally {
      last = performance.now();
    }
  };
  const throttled = () => {
    if (timer === undefined) run();
  };
  return Object.assign(throttled, {
    cancel() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
  });
}
