// Request IDs: a sane incoming X-Request-Id is kept; minted ones are unique, 12 characters of
// nanoid's alphabet, and differ between processes.
import { expect, test } from "bun:test";
import { requestIdFrom } from "../../src/context/request-id.ts";

test("a sane incoming ID is kept; anything else is replaced by a minted one", () => {
  expect(requestIdFrom("abc-123.x:y_z")).toBe("abc-123.x:y_z");
  for (const insane of [null, undefined, "", "has space", 'q"uote', "x".repeat(65), "é"]) expect(requestIdFrom(insane)).toMatch(/^[A-Za-z0-9_-]{12}$/);
});

test("minted IDs do not repeat", () => {
  const seen = new Set<string>();
  for (let i = 0; i < 200_000; i++) seen.add(requestIdFrom(null));
  expect(seen.size).toBe(200_000);
});

test("two processes mint different IDs", () => {
  const mint = () => Bun.spawnSync([process.execPath, "-e", `const { requestIdFrom } = await import(${JSON.stringify(`${import.meta.dir}/../../src/context/request-id.ts`)}); for (let i = 0; i < 1000; i++) console.log(requestIdFrom(null));`]).stdout.toString().trim().split("\n");
  const [a, b] = [mint(), mint()];
  expect(a).toHaveLength(1000);
  expect(new Set([...a, ...b]).size).toBe(2000);
});
