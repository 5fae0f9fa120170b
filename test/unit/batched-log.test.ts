// The access log writes the lines of one event-loop turn together.
import { expect, test } from "bun:test";
import { batchedLog } from "../../src/log.ts";

test("lines of one turn go out in one write, on the next turn", async () => {
  const writes: string[] = [];
  const { log } = batchedLog((chunk) => writes.push(chunk));
  log("a");
  log("b");
  expect(writes).toEqual([]);
  await new Promise((r) => setImmediate(r));
  expect(writes).toEqual(["a\nb\n"]);
  log("c");
  await new Promise((r) => setImmediate(r));
  expect(writes).toEqual(["a\nb\n", "c\n"]);
});

test("flush writes what waits at once; a full batch does not wait for the turn", () => {
  const writes: string[] = [];
  const { log, flush } = batchedLog((chunk) => writes.push(chunk));
  log("x");
  flush();
  expect(writes).toEqual(["x\n"]);
  for (let i = 0; i < 1024; i++) log(String(i));
  expect(writes.length).toBe(2);
  expect(writes[1]!.split("\n").length).toBe(1025);
});
