/**
 * The git steps of shipping a session's work, behind one interface (`ShipWork`): inspect the working copy,
 * commit what is uncommitted, bundle `baseSha..HEAD`, push the bundle. In the daemon they are Docker helpers
 * (`dockerShipWork`: no token and no network for the three that read the agent's copy; the token only in the
 * push helper, which never reads it), run by the spawn backend's helper runner (containers on Docker,
 * short-lived Pods on Kubernetes); unit tests give fakes. Engine and git failures become the kinds of
 * `lib/errors.ts`.
 */
import type { Config } from "./config.ts";
import { isDomainError, UnavailableError, UpstreamError } from "./errors.ts";
import { describeFindings, type SecretFinding } from "./secret_scan.ts";
import { createEngine, type Engine } from "../docker/engine.ts";
import { DockerUnreachableError } from "../docker/errors.ts";
import { bundleWork, commitWork, inspectWork, type WorkState } from "../docker/export_helper.ts";
import { pushBundle } from "../docker/push_helper.ts";
import { dockerHelperRunner, type HelperRunner } from "../docker/helper.ts";

/** The request of `ship`. */
export interface ShipRequest {
  title: string;
  description?: string;
  targetBranch?: string;
  draft?: boolean;
  /** Push even when an added line looks like a secret (admins only; the route checks the role). */
  allowSecrets?: boolean;
}

/** An added line looks like a secret: nothing was pushed. → 422 with `findings`. */
export class SecretsFoundError extends Error {
  override name = "SecretsFoundError";
  constructor(readonly findings: SecretFinding[], committed: boolean) {
    super(
      `Refusing to push: added lines look like secrets: ${describeFindings(findings)}` +
        (committed ? " (committed in the working copy, not pushed)" : "") +
        "; remove them from the session's commits, or an admin may pass allowSecrets",
    );
  }
}

/** The git steps on a session's working copy and the push; Docker helpers in the daemon, fakes in unit tests. */
export interface ShipWork {
  inspect(sessionId: string, baseSha: string): Promise<WorkState>;
  commit(
    sessionId: string,
    o: { message: string; authorName: string; authorEmail: string },
  ): Promise<{ head: string; committed: boolean; patch: string }>;
  bundle(sessionId: string, baseSha: string): Promise<{ head: string; bundle: Uint8Array }>;
  push(o: {
    repo: string;
    url: string;
    branch: string;
    baseSha: string;
    baseBranch: string;
    head: string;
    lease: string | null;
    bundle: Uint8Array;
    token: string;
  }): Promise<void>;
}

/** The helpers on the daemon's Docker engine; engine and git failures become the kinds of `lib/errors.ts`. */
export function dockerShipWork(
  config: Pick<Config, "dockerSock" | "workerImage" | "workerNetwork">,
  options: { engine?: Engine } = {},
): ShipWork {
  const engine = options.engine ?? createEngine({ socketPath: config.dockerSock });
  const runner = dockerHelperRunner(engine, { image: config.workerImage, network: config.workerNetwork });
  return helperShipWork(() => runner);
}

/**
 * The helpers on whatever runs them (`runner()`: the spawn backend's, asked at each use, so the daemon can
 * make this before its backend); their failures become the kinds of `lib/errors.ts`.
 */
export function helperShipWork(runner: () => HelperRunner): ShipWork {
  return {
    inspect: (sessionId, baseSha) => domain(inspectWork(runner(), { sessionId, baseSha })),
    commit: (sessionId, o) => domain(commitWork(runner(), { sessionId, ...o })),
    bundle: (sessionId, baseSha) => domain(bundleWork(runner(), { sessionId, baseSha })),
    push: (o) =>
      domain(pushBundle(runner(), {
        url: o.url,
        branch: o.branch,
        baseSha: o.baseSha,
        baseBranch: o.baseBranch,
        head: o.head,
        lease: o.lease,
        bundle: o.bundle,
        token: o.token,
      })),
  };
}

async function domain<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof DockerUnreachableError) {
      throw new UnavailableError(`Docker is unreachable: ${error.message}`);
    }
    if (isDomainError(error)) throw error;
    throw new UpstreamError(error instanceof Error ? error.message : String(error));
  }
}
