/**
 * A worker Pod's log tail, for `stopSession` (the logs kept of a stopped worker) and `workerLogs`. A worker
 * that never started (a failed clone) has no log of its own: its init container's log says why instead.
 */
import { NotFoundError } from "../errors.ts";
import { codeOf, type KubeClient } from "../kube/client.ts";
import { lastLines } from "./containers.ts";

/**
 * The last `tail` lines of the worker container's log, else of its clone's.
 * @throws {NotFoundError} when the Pod is gone.
 */
export async function readWorkerLogs(client: KubeClient, name: string, tail: number): Promise<string> {
  try {
    return lastLines(
      await client.text(client.path("pods", name, "log"), { container: "worker", tailLines: String(tail) }),
      tail,
    );
  } catch (error) {
    if (codeOf(error) === 404) throw new NotFoundError("The worker is gone");
    // The worker never started (a failed clone): its init container's log says why.
    if (codeOf(error) === 400) {
      return lastLines(
        await client.text(client.path("pods", name, "log"), {
          container: "clone",
          tailLines: String(tail),
        }),
        tail,
      );
    }
    throw error;
  }
}
