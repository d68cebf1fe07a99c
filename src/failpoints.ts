/**
 * Faults a test injects into the running daemon (CARRIER_SYNC_FAILPOINTS, tests only), so that the
 * watchdog (runtime/watchdog/watchdog.ts) can be shown to see and recover each kind of stall on the real
 * binary. Armed once at start, per thread (each thread has its own copy of this module); each fires
 * once: `take()` says true the first time only.
 */
import type { Failpoint } from './config/schema.js';

const armed = new Set<Failpoint>();

export function armFailpoints(names: readonly Failpoint[]): void {
  armed.clear();
  for (const name of names) armed.add(name);
}

/** True once for an armed failpoint (it is then spent), false otherwise. */
export function takeFailpoint(name: Failpoint): boolean {
  return armed.delete(name);
}

export function isFailpointArmed(name: Failpoint): boolean {
  return armed.has(name);
}
