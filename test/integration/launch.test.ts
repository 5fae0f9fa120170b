// test-lists: default
// The tests' one launcher (test/support/launch.ts) with small programs of its own: it waits for
// the ready line, says why a start failed, and leaves no process behind, children included.
import { expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { BUN, cleanEnv, launch } from "../support/launch.ts";
import { isRunning } from "../support/processes.ts";
import { tempDir } from "../support/server.ts";

/** Writes `source` as a script in `dir` and returns the command that runs it. */
function script(dir: string, source: string): string[] {
  const file = path.join(dir, `s${fs.readdirSync(dir).length}.ts`);
  fs.writeFileSync(file, source);
  return [BUN, file];
}

test("waits for the ready line, reads output after it, and kill9 ends the process and its children", async () => {
  using dir = tempDir("cubby-launch-");
  const command = script(
    dir.path,
    `const child = Bun.spawn(["sleep", "600"]);
await Bun.sleep(100);
console.log("ready on " + child.pid);
console.error("a warning");
setInterval(() => console.log("tick"), 20);`,
  );
  const proc = await launch({ name: "the script", command, env: cleanEnv(), ready: /ready on (\d+)/ });
  const child = Number(proc.readyMatch![1]);
  expect({ children: proc.children(), running: isRunning(child) }).toEqual({ children: [child], running: true });
  expect(await proc.waitForOutput("tick")).toEqual(["tick"]);
  await proc.waitForErrors(/a warn(ing)/);
  await proc.kill9();
  expect({ parent: isRunning(proc.pid), child: isRunning(child), signal: proc.signalCode, exited: await proc.exited }).toEqual({
    parent: false,
    child: false,
    signal: "SIGKILL",
    exited: 137,
  });
});

test("a process that exits before it is ready fails the start with its output", async () => {
  using dir = tempDir("cubby-launch-");
  const command = script(dir.path, `console.log("starting"); console.error("no config"); process.exit(3);`);
  const error = (await launch({ name: "the script", command, env: cleanEnv(), ready: /listening/ }).catch((e: Error) => e)) as Error;
  expect(error.message).toStartWith("the script exited (3) before printing /listening/");
  expect(error.message).toContain("stdout:\nstarting\n\nstderr:\nno config\n");
});

test("a process that stays silent past the timeout is killed, children and all", async () => {
  using dir = tempDir("cubby-launch-");
  const pids = path.join(dir.path, "pids");
  const command = script(dir.path, `const child = Bun.spawn(["sleep", "600"]); require("node:fs").writeFileSync(${JSON.stringify(pids)}, process.pid + " " + child.pid); await Bun.sleep(600_000);`);
  const error = (await launch({ name: "the script", command, env: cleanEnv(), ready: /never/, readyTimeoutMs: 3_000 }).catch((e: Error) => e)) as Error;
  expect(error.message).toStartWith("timed out after 3000 ms waiting for the script to print /never/");
  const [parent, child] = fs.readFileSync(pids, "utf8").split(" ").map(Number);
  expect({ parent: isRunning(parent!), child: isRunning(child!) }).toEqual({ parent: false, child: false });
});

test("a program that does not exist fails the start", async () => {
  const error = (await launch({ name: "nothing", command: ["/nonexistent/program"], env: cleanEnv() }).catch((e: Error) => e)) as Error;
  expect(error.message).toStartWith("nothing did not start (");
});
