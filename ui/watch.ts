/**
 * Opt-in browser notifications when a watched session settles. The watch list lives in `localStorage`, so it is
 * shared by every tab; each notification is tagged with the session id so two tabs show it once.
 */
import { type LocalStore, localStore as store } from "./local_store.ts";

const KEY = "lvmh.watched";

/** Ids of the sessions the user asked to be notified about. */
export function watchedSessions(s: LocalStore | null = store()): Set<string> {
  try {
    const v = JSON.parse(s?.getItem(KEY) ?? "[]");
    return new Set(Array.isArray(v) ? v.filter((x) => typeof x === "string") : []);
  } catch {
    return new Set();
  }
}

/** Add or remove a session from the watch list; returns whether it is now watched. */
export function setWatched(id: string, on: boolean, s: LocalStore | null = store()): boolean {
  const set = watchedSessions(s);
  if (on) set.add(id);
  else set.delete(id);
  s?.setItem(KEY, JSON.stringify([...set]));
  return on;
}

/**
 * Ask for permission (must run from a user gesture).
 * @returns true when notifications may be shown
 */
export async function askPermission(): Promise<boolean> {
  if (typeof Notification === "undefined") return false;
  if (Notification.permission === "granted") return true;
  if (Notification.permission === "denied") return false;
  return (await Notification.requestPermission()) === "granted";
}

/** Show "<name> is done" if the session is watched and permission was given; never throws. */
export function notifySettled(id: string, name: string, s: LocalStore | null = store()): void {
  if (!watchedSessions(s).has(id)) return;
  if (typeof Notification === "undefined" || Notification.permission !== "granted") return;
  try {
    const n = new Notification(`${name} is done`, {
      body: "The agent settled and waits for you.",
      tag: `lvmh-${id}`,
    });
    n.onclick = () => {
      globalThis.focus();
      location.assign(`/sessions/${encodeURIComponent(id)}`);
    };
  } catch { /* some browsers only allow notifications from a service worker */ }
}
