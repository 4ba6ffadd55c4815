/**
 * A session's own objects on Kubernetes besides its Pod: the ReadWriteOnce claim (working copy and pi's
 * files) and the Secret (agent token, models.json). The spawn pipeline repeats a step after a failure, so
 * creating either finds the one an earlier try made and reuses it when it is the session's; and the Secret,
 * which is immutable, is made again when what it holds is stale.
 */
import { ConflictError } from "../errors.ts";
import { codeOf, type KubeClient } from "../kube/client.ts";
import { claimName, secretName, SESSION_LABEL } from "../kube/objects.ts";
import type { PodLike } from "../kube/pod_state.ts";

/** Create an object; one that exists (a repeated step) is read and reused when it is the session's. */
export async function createOrReuse(
  client: KubeClient,
  resource: string,
  name: string,
  sessionId: string,
  body: unknown,
): Promise<void> {
  try {
    await client.json("POST", client.path(resource), { body, query: { fieldValidation: "Strict" } });
  } catch (error) {
    if (codeOf(error) !== 409) throw error;
    const found = await client.json<PodLike>("GET", client.path(resource, name));
    if (found.metadata.labels?.[SESSION_LABEL] !== sessionId) {
      throw new ConflictError(`Kubernetes: ${resource} "${name}" exists and is not lvmh's`);
    }
  }
}

/**
 * Make the session's Secret hold `secret` (a `secretBody`): created, or reused when it is the same. The
 * Secret is immutable: one kept from before a change (a new daemon token, another models.json) is made
 * again, since the worker would otherwise present a token the daemon no longer accepts.
 */
export async function putSessionSecret(
  client: KubeClient,
  sessionId: string,
  secret: unknown,
): Promise<void> {
  await createOrReuse(client, "secrets", secretName(sessionId), sessionId, secret);
  const kept = await client.json<{ data?: Record<string, string> }>(
    "GET",
    client.path("secrets", secretName(sessionId)),
  );
  const wanted = (secret as { stringData: Record<string, string> }).stringData;
  const same = Object.keys(wanted).length === Object.keys(kept.data ?? {}).length &&
    Object.entries(wanted).every(([key, v]) => kept.data?.[key] === encodeBase64(v));
  if (same) return;
  await client.json("DELETE", client.path("secrets", secretName(sessionId))).catch((error) => {
    if (codeOf(error) !== 404) throw error;
  });
  await client.json("POST", client.path("secrets"), {
    body: secret,
    query: { fieldValidation: "Strict" },
  });
}

/** Whether the session's claim exists (it holds both the working copy and pi's session files). */
export async function claimExists(client: KubeClient, sessionId: string): Promise<boolean> {
  try {
    await client.json("GET", client.path("persistentvolumeclaims", claimName(sessionId)));
    return true;
  } catch (error) {
    if (codeOf(error) === 404) return false;
    throw error;
  }
}

/** Base64 of UTF-8 text, as the API server shows a Secret's `data`. */
function encodeBase64(text: string): string {
  let binary = "";
  for (const b of new TextEncoder().encode(text)) binary += String.fromCharCode(b);
  return btoa(binary);
}
