/**
 * `a` / `r` answer the only pending approval on the page from anywhere (a focused card handles its own keys,
 * and several pending ones need the card focused, so one key never answers the wrong call).
 */
import { useEffect, useRef } from "preact/hooks";
import type { ApprovalDecision } from "../lib/protocol.ts";
import type { ApprovalView } from "./approval_view.ts";

/**
 * Listen for the keys while exactly one approval is pending.
 * @param decide answers an approval (the card's reason box is left out: typing there never answers)
 */
export function useApprovalKeys(
  pending: readonly ApprovalView[],
  decide: (id: string, decision: ApprovalDecision) => Promise<unknown>,
): void {
  const latest = useRef({ pending, decide });
  latest.current = { pending, decide };
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const { pending, decide } = latest.current;
      const t = e.target as HTMLElement | null;
      if (pending.length !== 1 || (e.key !== "a" && e.key !== "r")) return;
      if (e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) return;
      if (t?.closest("input, textarea, select, [contenteditable], .approval")) return;
      e.preventDefault();
      // Through the card's button when it is on the page, so a reason typed there goes along.
      const button = document.querySelector<HTMLButtonElement>(
        `[data-approval="${CSS.escape(pending[0].id)}"] button.${e.key === "a" ? "approve" : "reject"}`,
      );
      if (button) button.click();
      else void decide(pending[0].id, e.key === "a" ? "approve" : "reject");
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, []);
}
