/**
 * The Kubernetes backend's failures as the daemon's domain kinds (`lib/errors.ts`): the API client throws
 * its own errors, the spawn pipeline and the routes understand only the kinds. One wrapper at the edge does
 * that for every method, so no method has to remember it.
 */
import { isDomainError, UpstreamError } from "../errors.ts";
import { KubeRetryableError } from "../kube/client.ts";
import { RetryableError } from "./backend.ts";

/**
 * A copy of `backend` whose async methods fail with domain kinds: a retryable API answer becomes the
 * pipeline's RetryableError, a domain error passes, anything else is an UpstreamError. The methods named in
 * `synchronous` are left as they are (they answer at once and their callers expect no promise).
 */
export function withDomainErrors<T extends object>(backend: T, synchronous: readonly string[]): T {
  const out = { ...backend } as Record<string, unknown>;
  for (const [name, fn] of Object.entries(backend)) {
    if (typeof fn !== "function" || synchronous.includes(name)) continue;
    out[name] = async (...args: unknown[]) => {
      try {
        return await (fn as (...a: unknown[]) => Promise<unknown>)(...args);
      } catch (error) {
        if (error instanceof KubeRetryableError) throw new RetryableError(error.message);
        if (isDomainError(error)) throw error;
        throw new UpstreamError(error instanceof Error ? error.message : String(error));
      }
    };
  }
  return out as T;
}
