// The tests' one waiter (test/support/wait.ts): polled conditions, event-woken ones, and the
// errors a wait ends with.
import { expect, test } from "bun:test";
import { waitFor } from "../support/wait.ts";

test("resolves with the condition's first truthy value, sync or async", async () => {
  let n = 0;
  expect(await waitFor(() => (++n >= 3 ? `after ${n}` : undefined), "three checks", { pollMs: 1 })).toBe("after 3");
  let m = 0;
  expect(await waitFor(async () => ++m >= 2 && m, "two async checks", 1_000, 0)).toBe(2);
});

test("times out naming what it waited for, with the detail, after a last check past the deadline", async () => {
  const started = Date.now();
  let checks = 0;
  const error = await waitFor(() => (checks++, false), "the moon", { timeoutMs: 100, pollMs: 30, detail: () => "saw: nothing" }).catch((e: Error) => e);
  expect(String(error)).toBe("Error: timed out after 100 ms waiting for the moon; saw: nothing");
  expect(Date.now() - started).toBeGreaterThanOrEqual(100);
  expect(checks).toBeGreaterThanOrEqual(2); // at once, …, and once more past 100 ms
});

test("a condition that throws ends the wait with its error", async () => {
  let n = 0;
  const error = await waitFor(() => {
    if (++n === 2) throw new Error("the process exited");
    return false;
  }, "never", { pollMs: 1 }).catch((e: Error) => e);
  expect({ message: (error as Error).message, n }).toEqual({ message: "the process exited", n: 2 });
});

test("a wake-up checks again at once; without one, pollMs Infinity checks only at the deadline", async () => {
  let ready = false;
  const listeners = new Set<() => void>();
  const wake = (recheck: () => void) => (listeners.add(recheck), () => listeners.delete(recheck));
  setTimeout(() => {
    ready = true;
    for (const l of listeners) l();
  }, 20);
  const started = Date.now();
  expect(await waitFor(() => ready, "the event", { timeoutMs: 5_000, pollMs: Infinity, wake })).toBe(true);
  expect(Date.now() - started).toBeLessThan(2_000);
  expect(listeners.size).toBe(0); // unsubscribed

  let flipped = false;
  setTimeout(() => (flipped = true), 10);
  const before = Date.now();
  expect(await waitFor(() => flipped, "a change nobody announces", { timeoutMs: 300, pollMs: Infinity })).toBe(true);
  expect(Date.now() - before).toBeGreaterThanOrEqual(300);
});

test("a wake-up during an async check is not lost: the next check follows at once", async () => {
  let value = 0;
  let recheck = () => {};
  const started = Date.now();
  const got = await waitFor(
    async () => {
      const seen = value;
      if (seen === 0) {
        value = 1;
        recheck(); // announced while this check still runs
      }
      return seen;
    },
    "the second value",
    { timeoutMs: 5_000, pollMs: Infinity, wake: (r) => ((recheck = r), () => {}) },
  );
  expect({ got, fast: Date.now() - started < 2_000 }).toEqual({ got: 1, fast: true });
});
