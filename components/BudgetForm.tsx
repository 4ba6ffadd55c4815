/**
 * Set, raise or remove a session's budget from its page (operators): dollars and/or tokens, and what happens
 * when it is reached. The fields show the limits in force and follow them live (another person's change, an
 * approved raise) until this person starts editing. The daemon's answer comes back to every page as the
 * session row's budget, so the bar above needs nothing from here.
 */
import { useEffect, useState } from "preact/hooks";
import type { BudgetGlance } from "../lib/protocol.ts";
import { setBudget } from "../ui/rest.ts";
import { errorText } from "../ui/api.ts";

interface Fields {
  cost: string;
  tokens: string;
  onReach: "ask" | "stop";
}

function fieldsOf(b: BudgetGlance | undefined): Fields {
  return {
    cost: b?.limits.maxCost !== undefined ? String(Math.round(b.limits.maxCost * 100) / 100) : "",
    tokens: b?.limits.maxTokens !== undefined ? String(b.limits.maxTokens) : "",
    onReach: b?.onReach ?? "ask",
  };
}

/** The body of a `PUT`, or the reason the fields make none. */
export function budgetBody(
  f: Fields,
): { maxCost?: number; maxTokens?: number; onReach: "ask" | "stop" } | string {
  const cost = f.cost.trim() === "" ? undefined : Number(f.cost);
  const tokens = f.tokens.trim() === "" ? undefined : Number(f.tokens);
  if (cost !== undefined && !(Number.isFinite(cost) && cost > 0)) return "Dollars must be a number above 0.";
  if (tokens !== undefined && !(Number.isSafeInteger(tokens) && tokens > 0)) {
    return "Tokens must be a whole number above 0.";
  }
  if (cost === undefined && tokens === undefined) {
    return "Give dollars, tokens or both (or remove the budget).";
  }
  return {
    ...(cost !== undefined ? { maxCost: cost } : {}),
    ...(tokens !== undefined ? { maxTokens: tokens } : {}),
    onReach: f.onReach,
  };
}

export function BudgetForm({ sessionId, budget }: { sessionId: string; budget?: BudgetGlance }) {
  const shown = fieldsOf(budget);
  const key = JSON.stringify(shown);
  const [fields, setFields] = useState<Fields>(shown);
  const [dirty, setDirty] = useState(false);
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<{ kind: "ok" | "error"; text: string } | null>(null);
  // Follow the budget in force while this person is not editing.
  useEffect(() => {
    if (!dirty) setFields(shown);
  }, [key, dirty]);

  const edit = (patch: Partial<Fields>) => {
    setFields({ ...fields, ...patch });
    setDirty(true);
    setNote(null);
  };
  async function put(body: ReturnType<typeof budgetBody> | Record<never, never>, done: string) {
    if (typeof body === "string") return setNote({ kind: "error", text: body });
    setBusy(true);
    try {
      await setBudget(sessionId, body);
      setDirty(false);
      setNote({ kind: "ok", text: done });
    } catch (e) {
      setNote({ kind: "error", text: errorText(e) });
    } finally {
      setBusy(false);
    }
  }
  return (
    <form
      class="budget-form"
      data-budget-form
      // Checked here, with a message of its own (the browser's step check would block it silently).
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        void put(budgetBody(fields), budget ? "Budget changed." : "Budget set.");
      }}
    >
      <label>
        <span>Dollars</span>
        <input
          name="maxCost"
          type="number"
          inputMode="decimal"
          min="0.01"
          step="0.01"
          placeholder="none"
          value={fields.cost}
          onInput={(e) => edit({ cost: (e.target as HTMLInputElement).value })}
        />
      </label>
      <label>
        <span>Tokens</span>
        <input
          name="maxTokens"
          type="number"
          inputMode="numeric"
          min="1"
          step="1"
          placeholder="none"
          value={fields.tokens}
          onInput={(e) => edit({ tokens: (e.target as HTMLInputElement).value })}
        />
      </label>
      <label>
        <span>Then</span>
        <select
          name="onReach"
          value={fields.onReach}
          onChange={(e) => edit({ onReach: (e.target as HTMLSelectElement).value as Fields["onReach"] })}
        >
          <option value="ask">ask to go on</option>
          <option value="stop">stop the run</option>
        </select>
      </label>
      <div class="budget-form-actions">
        <button type="submit" class="small" disabled={busy}>{budget ? "Save" : "Set budget"}</button>
        {budget && (
          <button
            type="button"
            class="ghost small"
            data-budget-remove
            disabled={busy}
            onClick={() => void put({}, "Budget removed.")}
          >
            Remove
          </button>
        )}
        {dirty && (
          <button
            type="button"
            class="ghost small"
            disabled={busy}
            // The fields go back at once, in this render (the effect that follows the budget runs later).
            onClick={() => (setFields(shown), setDirty(false), setNote(null))}
          >
            Cancel
          </button>
        )}
      </div>
      {note && (
        <p class={`note ${note.kind} small`} role={note.kind === "error" ? "alert" : "status"}>{note.text}</p>
      )}
    </form>
  );
}
