/**
 * The session's model: a picker of the models pi has a key for (as the plugin reported them), and when a
 * switch applies — from the next run on pi 0.73.1, the next turn on 1.6.0. The switch is confirmed once the
 * session's snapshot names the new model; an error from the daemon is shown as it came.
 */
import { useState } from "preact/hooks";
import type { ModelEntry } from "../lib/protocol.ts";

interface ModelPickerProps {
  models: ModelEntry[];
  provider: string | null;
  model: string | null;
  modelSwitch?: "next_run" | "next_turn";
  online: boolean;
  /** Resolves to an error message, or null once the daemon took the switch. */
  onSwitch(provider: string, model: string): Promise<string | null>;
}

const key = (provider: string | null, id: string | null) => `${provider ?? ""}/${id ?? ""}`;

export function ModelPicker({ models, provider, model, modelSwitch, online, onSwitch }: ModelPickerProps) {
  const [wanted, setWanted] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const usable = models.filter((m) => m.hasAuth);
  const current = key(provider, model);
  if (!usable.length) return null;
  const when = modelSwitch === "next_turn" ? "from the next turn" : "from the next run";
  const shown = usable.some((m) => key(m.provider, m.id) === current) ? current : "";

  async function pick(value: string) {
    const m = usable.find((m) => key(m.provider, m.id) === value);
    if (!m || value === current) return;
    setError(null);
    setWanted(value);
    const err = await onSwitch(m.provider, m.id);
    if (err) {
      setWanted(null);
      setError(err);
    }
  }

  const state = error
    ? { cls: "error", text: `Not switched: ${error}` }
    : wanted && wanted === current
    ? { cls: "ok", text: `Switched: applies ${when}.` }
    : wanted
    ? { cls: "pending", text: "Switching…" }
    : null;
  return (
    <span class="model-picker">
      <label class="small muted" for="model-picker">Model</label>
      <select
        id="model-picker"
        disabled={!online || (wanted !== null && wanted !== current)}
        value={wanted && wanted !== current ? wanted : shown}
        onChange={(e) => void pick((e.target as HTMLSelectElement).value)}
        title={`A new model applies ${when}`}
      >
        {!shown && <option value="">{model ?? "unknown"}</option>}
        {usable.map((m) => (
          <option value={key(m.provider, m.id)}>
            {m.name || m.id} ({m.provider}){m.input.includes("image") ? " · images" : ""}
          </option>
        ))}
      </select>
      {state && (
        <span class={`note ${state.cls}`} role="status" data-model-switch={state.cls}>{state.text}</span>
      )}
    </span>
  );
}
