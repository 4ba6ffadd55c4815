// PLACEHOLDER written by the lead so the core compiles; the spawn engineer replaces this whole file.

/** The GitLab connection. */
export interface Gitlab {
  connected(): boolean;
}

/** Placeholder factory. */
export function createGitlab(): Gitlab {
  return { connected: () => false };
}
