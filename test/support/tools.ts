/** Test support: tests that need a program this machine may lack. */
import { test } from "bun:test";

/**
 * `test`, when nothing is missing. Otherwise a skip that says loudly what is missing, except when
 * `CI` is set: CI installs every tool, so there each test fails with the same reason instead.
 * @param what the tests concerned, for the message ("the nginx tests")
 * @param missing the tools (and how to get them) this machine lacks; empty when all are there
 */
export function testNeeding(what: string, missing: string[]): typeof test {
  if (missing.length === 0) return test;
  const reason = `this machine lacks ${missing.join("; ")}`;
  if (process.env.CI) {
    const failing = (name: string) =>
      test(name, () => {
        throw new Error(`CI is set and ${reason}`);
      });
    return failing as unknown as typeof test;
  }
  console.warn(`\n*** SKIPPING ${what}: ${reason} ***\n`);
  return test.skip;
}
