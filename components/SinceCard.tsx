/** The divider where this browser last stopped reading a session, with what happened since. */
import type { SinceSummary } from "../ui/last_seen.ts";
import { formatCost } from "../ui/format.ts";

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

export function SinceCard({ since }: { since: SinceSummary }) {
  const files = since.files;
  return (
    <div class="since" role="note" data-since-divider>
      <div class="since-line">
        <span>Since you last looked</span>
      </div>
      <p class="since-card small" data-since-card>
        <span data-since-runs={since.runs}>{plural(since.runs, "run")}</span>
        {" · "}
        <span data-since-tools={since.tools}>{plural(since.tools, "tool call")}</span>
        {" · "}
        <span data-since-files={files.length} title={files.join("\n")}>
          {files.length === 0
            ? "no files touched"
            : `${plural(files.length, "file")} touched: ${files.slice(0, 3).join(", ")}${
              files.length > 3 ? ` and ${files.length - 3} more` : ""
            }`}
        </span>
        {since.cost > 0 && (
          <>
            {" · "}
            <span data-since-cost>{formatCost(since.cost)}</span>
          </>
        )}
      </p>
    </div>
  );
}
