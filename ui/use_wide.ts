/** True on a screen wide enough for side-by-side diffs; follows the window as it is resized or rotated. */
import { useEffect, useState } from "preact/hooks";

/** The width from which a diff shows old and new side by side. */
export const WIDE_QUERY = "(min-width: 1100px)";

export function useWide(query = WIDE_QUERY): boolean {
  // The server renders the phone layout; the browser switches after hydration.
  const [wide, setWide] = useState(false);
  useEffect(() => {
    const m = globalThis.matchMedia?.(query);
    if (!m) return;
    setWide(m.matches);
    const on = () => setWide(m.matches);
    m.addEventListener("change", on);
    return () => m.removeEventListener("change", on);
  }, [query]);
  return wide;
}
