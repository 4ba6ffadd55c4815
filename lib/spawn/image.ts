/**
 * The worker image, checked and (when missing or stale) built once for all concurrent spawns: the first spawn
 * starts the check, the others wait on the same promise, and every waiter hears when a build begins so its
 * job can say `building`. A failure, or `reset()`, lets the next spawn check again.
 */
import type { SpawnBackend } from "./backend.ts";

/** The single-flight gate in front of the worker image. */
export interface ImageGate {
  /**
   * Resolve once the image is current. `onBuilding` is called if this caller ends up waiting on a build.
   * @throws whatever the backend's check or build threw (the same error for every waiter).
   */
  ensure(onBuilding: () => void): Promise<void>;
  /** Forget that the image was ready (it vanished): the next `ensure` checks again. */
  reset(): void;
}

/** Build the gate on a backend's image check and build. */
export function createImageGate(backend: Pick<SpawnBackend, "imageCurrent" | "buildImage">): ImageGate {
  let ready: Promise<void> | null = null;
  let building = false;
  /** Callers waiting on the check in progress, told if it turns into a build. */
  const waiters = new Set<() => void>();

  async function checkAndBuild(): Promise<void> {
    try {
      if (await backend.imageCurrent()) return;
      building = true;
      for (const tell of waiters) tell();
      await backend.buildImage();
    } finally {
      building = false;
      waiters.clear();
    }
  }

  return {
    ensure(onBuilding) {
      if (ready && building) onBuilding();
      else if (!ready || waiters.size > 0) waiters.add(onBuilding);
      if (!ready) {
        const attempt: Promise<void> = checkAndBuild().catch((error) => {
          if (ready === attempt) ready = null;
          throw error;
        });
        ready = attempt;
      }
      return ready;
    },
    reset() {
      ready = null;
    },
  };
}
