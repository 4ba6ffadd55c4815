/**
 * The GitLab hook secret: the token GitLab sends with each event. Set through the API (kept in the deployment's
 * settings, lib/settings.ts, so every replica checks the same one) or by
 * `LVMH_GITLAB_HOOK_SECRET`, which wins; with neither, the GitLab hook answers 404.
 */
import { z } from "zod";
import { safeEqual } from "../auth.ts";
import { HOOK_GITLAB_SECRET, type SettingsAccess } from "../settings.ts";

/** `PUT /api/hooks/gitlab`. */
export const GitlabSecretBody = z.object({ secret: z.string().min(16, "secret is too short").max(256) });

const SECRET_KEY = HOOK_GITLAB_SECRET;

/** The secret and where it comes from. */
export class GitlabSecret {
  #store: SettingsAccess;
  #env: string | null;

  /** @param envSecret `LVMH_GITLAB_HOOK_SECRET`, or null when it is not set */
  constructor(store: SettingsAccess, envSecret: string | null) {
    this.#store = store;
    this.#env = envSecret;
  }

  /** The secret in force: the environment's, else the one set through the API; null when none. */
  value(): string | null {
    return this.#env ?? this.#store.get(SECRET_KEY);
  }

  /** Store a secret (ignored while the environment sets one; the answer says so). */
  async set(secret: string): Promise<{ fromEnv: boolean }> {
    await this.#store.put({ [SECRET_KEY]: secret });
    return { fromEnv: this.#env !== null };
  }

  /** Remove the secret set through the API (the hook answers 404 again unless the environment sets one). */
  async clear(): Promise<{ fromEnv: boolean }> {
    await this.#store.put({ [SECRET_KEY]: null });
    return { fromEnv: this.#env !== null };
  }

  /** Where the secret in force comes from: the environment wins over the API. */
  source(): "env" | "api" | null {
    return this.#env !== null ? "env" : this.#store.get(SECRET_KEY) !== null ? "api" : null;
  }

  /** True when `token` is the secret in force (constant-time). */
  async check(token: string | null): Promise<boolean> {
    const secret = this.value();
    return secret !== null && token !== null && await safeEqual(token, secret);
  }
}
