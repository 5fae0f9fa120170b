// The one way a test waits for something it cannot be told about (kernel state, a file another
// process writes, a row a background sweep deletes): poll a condition until it holds or a deadline
// passes. Where an event exists (a socket's "close", a promise), await that instead.

/**
 * Polls `condition` until it returns a truthy value, and resolves with that value.
 *
 * - `condition` may be synchronous or return a promise; it is first called at once, then again
 *   every `pollMs` milliseconds after the previous call settled (0: on the next turn of the event
 *   loop, for conditions that flip within a tick). A condition that throws or rejects fails the wait.
 * - `what` names the awaited state in the error: "timed out after <timeoutMs> ms waiting for <what>".
 * - `timeoutMs` bounds the whole wait (default 10 s); it fails only after a poll that began past
 *   the deadline, so a slow poll does not cost the condition its last look.
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  what: string,
  timeoutMs = 10_000,
  pollMs = 20,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await (pollMs > 0 ? Bun.sleep(pollMs) : new Promise((resolve) => setImmediate(resolve)));
  }
}
