/**
 * A bound on a call to Redis or to the spool's file system: the lease's timing (spool-lease.ts)
 * holds only if no step waits longer than it allows, whatever a slow share or an unreachable Redis does.
 */

/** Rejects with `message` when `promise` has not settled within `ms`; a late result is dropped. */
export function withDeadline<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
    timer.unref();
  });
  promise.catch(() => {});
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
