// PLACEHOLDER written by the lead so the core compiles; the spawn engineer replaces this whole file.
import type { SpawnJob } from "./protocol.ts";

/** Starts agent sessions in containers. */
export interface Spawner {
  jobs(): SpawnJob[];
  shutdown(): Promise<void>;
}

/** Placeholder factory. */
export function createSpawner(): Spawner {
  return { jobs: () => [], shutdown: () => Promise.resolve() };
}
