/**
 * std's assertion names (`assert`, `assertEquals`, `assertNotEquals`, `assertMatch`) over node:assert/strict,
 * for the tests of the Kubernetes fake, which are written in std's style: JSR, where @std/assert lives, is out
 * of these machines' reach, so its names are kept and node's assertions do the work.
 */
import nodeAssert from "node:assert/strict";

export const assert: (v: unknown, msg?: string) => asserts v = nodeAssert.ok;
export const assertEquals = (a: unknown, b: unknown, msg?: string) => nodeAssert.deepEqual(a, b, msg);
export const assertNotEquals = (a: unknown, b: unknown, msg?: string) => nodeAssert.notDeepEqual(a, b, msg);
export const assertMatch = (s: string, re: RegExp, msg?: string) => nodeAssert.match(s, re, msg);
