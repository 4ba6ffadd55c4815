/**
 * Run `fn` at most once per `intervalMs`: the first call runs at once, later calls inside the window
 * collapse into one trailing run, so the last change is never lost.
 */
export function throttle(fn: () => void, intervalMs: number): (() => void) & { cancel(): void } {
  let last = -Infinity;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const run = () => {
    timer = undefined;
    last = Date.now();
    fn();
  };
  const throttled = () => {
    if (timer !== undefined) return;
    const wait = last + intervalMs - Date.now();
    if (wait <= 0) run();
    else timer = setTimeout(run, wait);
  };
  return Object.assign(throttled, {
    cancel() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
  });
}
