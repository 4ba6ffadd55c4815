/**
 * Create and start a session's worker, with one more try on a fresh worker when the backend calls the start
 * failure transient. No half-made worker is left behind: one whose start failed is removed before throwing.
 */
import { RetryableError, type SpawnBackend, type WorkerRequest } from "./backend.ts";

/**
 * @returns the started worker's id.
 * @throws what the backend threw (ImageMissingError, UpstreamError, UnavailableError).
 */
export async function startWorker(
  backend: Pick<SpawnBackend, "createWorker" | "startWorker" | "removeWorker">,
  request: WorkerRequest,
): Promise<string> {
  for (let attempt = 1;; attempt++) {
    const id = await backend.createWorker(request);
    try {
      await backend.startWorker(id);
      return id;
    } catch (error) {
      await backend.removeWorker(id);
      if (attempt > 1 || !(error instanceof RetryableError)) throw error;
    }
  }
}
