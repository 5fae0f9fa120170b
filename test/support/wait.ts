// The one way a test waits for something: check a condition until it holds or a deadline passes.
// It checks again every `pollMs` (kernel state, a file another process writes, a row a background
// sweep deletes: there is no event for those), and at once whenever a `wake` source says something
// changed (bytes arrived on a socket, a process printed a line), so event-driven waits do not poll
// slowly and polled ones do not need an event. Plain Node.js as well as Bun: Playwright's runner
// (test/e2e/fixtures.ts) uses it too.

/** How long and how often {@link waitFor} checks. */
export interface WaitOptions {
  /** The bound on the whole wait, in milliseconds (default 10 s). */
  timeoutMs?: number;
  /**
   * Milliseconds between checks after the previous one settled (default 20; 0: on the next turn
   * of the event loop, for conditions that flip within a tick; Infinity: only on `wake` and at
   * the deadline).
   */
  pollMs?: number;
  /**
   * Subscribes `recheck` to an event source and returns the unsubscribe; each call checks the
   * condition again at once (calls during a check make it run again right after).
   */
  wake?: (recheck: () => void) => () => void;
  /** What to add to the timeout error, e.g. the bytes or output seen so far. */
  detail?: () => string;
}

/**
 * Checks `condition` until it returns a truthy value, and resolves with that value.
 *
 * - `condition` may be synchronous or return a promise; it is first called at once, then again
 *   after every `pollMs` and on every `wake`. A condition that throws or rejects fails the wait
 *   with its error (how a condition says it can no longer hold, e.g. the process exited).
 * - `what` names the awaited state in the error: "timed out after <timeoutMs> ms waiting for
 *   <what>", followed by `detail()` when given.
 * - The wait fails only after a check that began past the deadline, so a slow check does not
 *   cost the condition its last look.
 * @param options the options, or (the short form) the timeout in milliseconds
 * @param pollMs with the short form: milliseconds between checks
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  what: string,
  options: WaitOptions | number = {},
  pollMs?: number,
): Promise<NonNullable<T>> {
  const o = typeof options === "number" ? { timeoutMs: options, pollMs } : options;
  const timeoutMs = o.timeoutMs ?? 10_000;
  const interval = o.pollMs ?? 20;
  const deadline = Date.now() + timeoutMs;
  // Set by a wake-up; a wake-up during a check is kept so that the next check is not delayed.
  let woken = false;
  let resume: (() => void) | undefined;
  const unsubscribe = o.wake?.(() => {
    woken = true;
    resume?.();
  });
  try {
    for (;;) {
      woken = false;
      const value = await condition();
      if (value) return value as NonNullable<T>;
      const left = deadline - Date.now();
      if (left < 0) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${o.detail === undefined ? "" : `; ${o.detail()}`}`);
      if (woken) continue;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          clearImmediate(immediate);
          resume = undefined;
          resolve();
        };
        // Past the deadline by a millisecond, so the last check begins after it.
        const timer = interval > 0 ? setTimeout(done, Math.min(interval, left + 1)) : undefined;
        const immediate = interval > 0 ? undefined : setImmediate(done);
        resume = done;
      });
    }
  } finally {
    unsubscribe?.();
  }
}
