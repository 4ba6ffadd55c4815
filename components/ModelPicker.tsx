/**
 * The session's model: a picker of the models pi has a key for (as the plugin reported them), and when a
 * switch applies — from the next run on pi 0.73.1, the next turn on 1.6.0. The switch is confirmed by the
 * plugin's `command_result` (or, from plugins that never answer, once the session's snapshot names the new
 * model); an error from the daemon or a refusal from pi ("refused: no API key") is shown as it came.
 */
import { useState } from "preact/hooks";
import type { ModelEntry } from "../lib/protocol.ts";
import type { CommandOutcome } from "../ui/conversation.ts";
import type { CommandSent } from "../ui/steer.ts";

interface ModelPickerProps {
  models: ModelEntry[];
  provider: string | null;
  model: string | null;
  modelSwitch?: "next_run" | "next_turn";
  online: boolean;
  /** The plugin's answers to commands, by commandId. */
  results: Record<string, CommandOutcome>;
  onSwitch(provider: string, model: string): Promise<CommandSent>;
}

const key = (provider: string | null, id: string | null) => `${provider ?? ""}/${id ?? ""}`;

export function ModelPicker(
  { models, provider, model, modelSwitch, online, results, onSwitch }: ModelPickerProps,
) {
  const [wanted, setWanted] = useState<string | null>(null);
  const [commandId, setCommandId] = useState<string | null>(null);
  const [sendError, setSendError] = useState<string | null>(null);
  const answer = commandId ? results[commandId] : undefined;
  const error = sendError ?? (answer && !answer.ok ? answer.error : null);
  const usable = models.filter((m) => m.hasAuth);
  const current = key(provider, model);
  if (!usable.length) return null;
  const when = modelSwitch === "next_turn" ? "from the next turn" : "from the next run";
  const shown = usable.some((m) => key(m.provider, m.id) === current) ? current : "";

  async function pick(value: string) {
    const m = usable.find((m) => key(m.provider, m.id) === value);
    if (!m || value === current) return;
    setSendError(null);
    setCommandId(null);
    setWanted(value);
    const sent = await onSwitch(m.provider, m.id);
    if (sent.error !== null) {
      setWanted(null);
      setSendError(sent.error);
    } else setCommandId(sent.commandId);
  }

  const refused = error !== null && sendError === null;
  const state = error
    ? { cls: "error", text: `Not switched: ${error}` }
    : wanted && (wanted === current || answer?.ok)
    ? { cls: "ok", text: `Switched: applies ${when}.` }
    : wanted
    ? { cls: "pending", text: "Switching…" }
    : null;
  return (
    <span class="model-picker">
      <label class="small muted" for="model-picker">Model</label>
      <select
        id="model-picker"
        disabled={!online || (wanted !== null && wanted !== current && !refused)}
        value={wanted && wanted !== current && !refused ? wanted : shown}
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
