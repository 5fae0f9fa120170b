/**
 * The shape of a decision that is usually made from caches in the turn it is asked for, and
 * sometimes needs I/O: {@link NowOrLater}.
 *
 * Why the rest of the work is a function and not a promise: the content answered at once
 * (server/content-now.ts) asks, and when the answer is not ready it gives up and the usual path
 * asks again from the request. A promise would have started the I/O already — looked a bearer
 * key up before the rate limit charged the attempt (auth/principal.ts: reserve, then check), and
 * done it twice. A {@link Later} starts nothing until it is called, so giving up costs nothing.
 */

/** The rest of a decision: starts its I/O when called, never before. */
export type Later<T> = () => Promise<T>;

/**
 * A decision made now (a value, no allocation) or the rest of it to run ({@link Later}). `T`
 * is never itself a function.
 */
export type NowOrLater<T> = T | Later<T>;

/** The value of `decision`: itself when made now, else the promise of running its rest. */
export function settle<T>(decision: NowOrLater<T>): T | Promise<T> {
  return typeof decision === "function" ? (decision as Later<T>)() : decision;
}

/** Whether `decision` was made now. */
export function isNow<T>(decision: NowOrLater<T>): decision is T {
  return typeof decision !== "function";
}
