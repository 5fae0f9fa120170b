// Generated protobuf code must match proto/ (scripts/gen-proto.ts), and proto/ must pass buf lint.
import { expect, test } from "bun:test";
import path from "node:path";

const root = path.resolve(import.meta.dir, "../..");

async function run(cmd: string[]) {
  const proc = Bun.spawn(cmd, { cwd: root, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

test("src/gen is what buf generates from proto/", async () => {
  expect(await run([process.execPath, "scripts/gen-proto.ts", "--check"])).toEqual({ code: 0, stdout: "src/gen is up to date\n", stderr: "" });
}, 30_000);

test("buf lint passes", async () => {
  expect(await run([path.join(root, "node_modules/.bin/buf"), "lint", "proto"])).toEqual({ code: 0, stdout: "", stderr: "" });
}, 30_000);
