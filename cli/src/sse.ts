/** An incremental `text/event-stream` parser (the subset the daemon writes: id, event, data, comments). */

/** One dispatched server-sent event. */
export interface SseMessage {
  id: string | null;
  event: string;
  data: string;
}

/** Feed it text as it arrives; it calls `onEvent` for each complete event that carries data. */
export function createSseParser(
  onEvent: (msg: SseMessage) => void,
): (text: string) => void {
  let buf = "";
  let cur = {
    id: null as string | null,
    event: "message",
    data: [] as string[],
  };
  const line = (l: string) => {
    if (l === "") {
      if (cur.data.length) {
        onEvent({ id: cur.id, event: cur.event, data: cur.data.join("\n") });
      }
      cur = { id: null, event: "message", data: [] };
      return;
    }
    if (l.startsWith(":")) return;
    const at = l.indexOf(":");
    const field = at < 0 ? l : l.slice(0, at);
    const value = at < 0 ? "" : l.slice(at + 1).replace(/^ /, "");
    if (field === "id") cur.id = value;
    else if (field === "event") cur.event = value;
    else if (field === "data") cur.data.push(value);
  };
  return (text: string) => {
    buf += text;
    const parts = buf.split(/\r\n|\n|\r(?!$)/);
    buf = parts.pop() ?? "";
    for (const p of parts) line(p);
  };
}
