/**
 * The shape of a decision that is usually made from caches in the turn it is asked for, and
 * sometimes needs I/O: {@link NowOrLater}.
 *
 * Why the rest of the work is a function and not a promise: a decision made of several steps
 * (serving/content.ts's decideContent: the file, then the caller's key, then the key's user)
 * asks each step now and, when one is not ready, hands its rest on to be run after the steps
 * before it (auth/principal.ts: the rate limit charges an attempt before the key is looked up).
 * A promise would have started that step's I/O at once, out of order; a {@link Later} starts
 * nothing until it is called, and a decision made now allocates no promise at all.
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
