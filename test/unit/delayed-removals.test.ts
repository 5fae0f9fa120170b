// DelayedRemovals (storage/blob-memory.ts): a blob's removal waits its grace period, runs once
// per name, in the order asked, at most 64 at a time, and cancel() hands back what has not started.
import { expect, test } from "bun:test";
import { DelayedRemovals } from "../../src/storage/blob-memory.ts";
import { waitFor } from "../support/wait.ts";

test("each name is removed once, after the grace period, in the order asked", async () => {
  const removed: string[] = [];
  const removals = new DelayedRemovals(async (name) => void removed.push(name), 50);
  const asked = performance.now();
  for (const name of ["a", "b", "a", "c"]) removals.schedule(name);
  expect(removed).toEqual([]);
  await waitFor(() => removed.length === 3 || undefined, "three removals");
  expect(performance.now() - asked).toBeGreaterThanOrEqual(45);
  expect(removed).toEqual(["a", "b", "c"]);
  // Asked again once done: removed again (a name is pending only until its removal starts).
  removals.schedule("a");
  await waitFor(() => removed.length === 4 || undefined, "a again");
});

test("7 000 at once run 64 at a time, each batch after the last ended; a failure is logged, not thrown", async () => {
  let running = 0;
  let most = 0;
  let done = 0;
  const removals = new DelayedRemovals(async (name) => {
    running++;
    most = Math.max(most, running);
    await new Promise((resolve) => setTimeout(resolve, 1));
    running--;
    done++;
    if (name === "n13") throw new Error("gone already");
  }, 10);
  const started = performance.now();
  for (let i = 0; i < 7000; i++) removals.schedule(`n${i}`);
  // Asking is cheap: no timer per name.
  expect(performance.now() - started).toBeLessThan(200);
  await waitFor(() => done === 7000 || undefined, "every removal", 30_000);
  expect(most).toBe(64);
});

test("cancel() stops what has not started and hands back the names", async () => {
  const removed: string[] = [];
  const removals = new DelayedRemovals(async (name) => void removed.push(name), 60_000);
  removals.schedule("x");
  removals.schedule("y");
  expect(removals.cancel().sort()).toEqual(["x", "y"]);
  expect(removals.cancel()).toEqual([]);
  removals.schedule("z");
  expect(removals.cancel()).toEqual(["z"]);
  expect(removed).toEqual([]);
});
