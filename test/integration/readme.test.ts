// test-lists: default
// The README's examples run as written (issue 39: "the README tried by a newcomer"): the Quick
// start block through bash, with only the URL pointed at this test's server and DATA_DIR at its
// data, and every curl example of the REST API's table, in the table's order, against one
// uploaded file. Each must answer 2xx (an example that 404s, 400s or fails to parse fails here),
// so an edit that breaks an example breaks the build. And the README is the route list a person
// reads: every operation /openapi.json declares has an example there (issue 38).
import { afterAll, beforeAll, expect, test } from "bun:test";
import encodeJpeg from "@jsquash/jpeg/encode";
import fs from "node:fs";
import path from "node:path";
import { BACKEND } from "../support/backend.ts";
import { BUN } from "../support/launch.ts";
import { ROOT, startServer, tempDir, type RunningServer } from "../support/server.ts";

const README = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
let server: RunningServer;
const dir = tempDir("cubby-readme-");

beforeAll(async () => {
  server = await startServer();
}, 60_000);
afterAll(async () => {
  await server?.[Symbol.asyncDispose]();
  dir[Symbol.dispose]();
});

/** The fenced ```sh block right after `heading`'s line and `after` (a line of prose), as text. */
function shBlockAfter(heading: string, after: string): string {
  const start = README.indexOf(after, README.indexOf(heading));
  expect(start).toBeGreaterThan(0);
  const open = README.indexOf("```sh\n", start);
  return README.slice(open + "```sh\n".length, README.indexOf("\n```", open));
}

/**
 * Runs `script` in bash in the scratch directory, with `cubby` as the README means it (the CLI
 * from this checkout), the README's variables, and the README's URL pointed at the server.
 */
function bash(script: string, env: Record<string, string> = {}): { code: number; out: string; err: string } {
  const prelude = `set -euo pipefail\ncubby() { "${BUN}" "${path.join(ROOT, "src/main.ts")}" "$@"; }\nnpm() { shift 2; [ "$1" = "cubby" ] && shift && [ "$1" = "--" ] && shift; cubby "$@"; }\n`;
  const run = Bun.spawnSync(["bash", "-c", prelude + script.replaceAll("http://localhost:8080", server.url)], {
    cwd: dir.path,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir.path, DATA_DIR: server.dataDir, ...env },
  });
  return { code: run.exitCode ?? -1, out: run.stdout.toString(), err: run.stderr.toString() };
}

// The Quick start's CLI finds the data through DATA_DIR alone: SQLite's (PostgreSQL's would need DATABASE_URL too).
test.skipIf(BACKEND !== "sqlite-disk")("Quick start: the key is minted and both uploads answer a File object", () => {
  const block = shBlockAfter("## Quick start", "In another, mint an API key");
  // Each curl answers 2xx or fails the script (-f), and prints the File object.
  const r = bash(block.replaceAll("curl -T", "curl -sS -f -w '\\n' -T"));
  expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
  const objects = r.out.trim().split("\n").map((l) => JSON.parse(l) as { name: string; content_type: string });
  expect(objects.map((o) => [o.name, o.content_type])).toEqual([
    ["spec.pdf", "application/pdf"],
    ["logo.png", "image/png"],
  ]);
});

test("the REST API's table: every curl example answers 2xx, in the table's order, on one file", async () => {
  const key = await server.mintKey("readme@example.com");
  const rows = README.slice(README.indexOf("| operation | example |"), README.indexOf("**Expiry.**")).split("\n").slice(2);
  const examples = rows
    .map((row) => /`(curl [^`]*)`/.exec(row)?.[1]?.replaceAll("\\|", "|"))
    .filter((c): c is string => c !== undefined);
  expect(examples.length).toBeGreaterThan(15);
  for (const name of ["photo.jpg", "new.jpg", "a.bin"]) fs.writeFileSync(path.join(dir.path, name), crypto.getRandomValues(new Uint8Array(1000)));
  // The thumbnail a browser would send (a video's poster): a real JPEG, which the server decodes.
  const poster = { data: new Uint8ClampedArray(64 * 48 * 4).fill(200), width: 64, height: 48 } as unknown as Parameters<typeof encodeJpeg>[0];
  fs.writeFileSync(path.join(dir.path, "poster.jpg"), new Uint8Array(await encodeJpeg(poster, { quality: 80 })));
  const setup = [
    `H="Authorization: Bearer ${key}"`,
    `B=${server.url}`,
    `ID=$(curl -sS -f -T photo.jpg -X POST -H "$H" "$B/v1/files?name=first.jpg" | sed 's/.*"id":"\\([^"]*\\)".*/\\1/')`,
    `SHARE_ID=$(curl -sS -f -X POST -H "$H" "$B/v1/files/$ID/shares" | sed 's/.*"id":"\\([^"]*\\)".*/\\1/')`,
  ].join("\n");
  // The file's delete runs last: the examples after it in the table need the file.
  const ordered = [...examples.filter((c) => !c.startsWith('curl -X DELETE -H "$H" "$B/v1/files/$ID"')), ...examples.filter((c) => c.startsWith('curl -X DELETE -H "$H" "$B/v1/files/$ID"'))];
  const script = [setup, ...ordered.map((c) => `echo "$(${c.replace(/^curl /, "curl -sS -o /dev/null -w '%{http_code}' ")}) ${c.replaceAll('"', '\\"').replaceAll("$", "\\$").replaceAll("`", "\\`")}"`)].join("\n");
  const r = bash(script);
  expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
  const results = r.out.trim().split("\n");
  expect(results.length).toBe(ordered.length);
  for (const line of results) expect(line).toMatch(/^2\d\d /);
});

/**
 * Whether README has an example of `method path` (an OpenAPI path template, `{id}` for a
 * parameter): a curl line with that method (GET: none other given; POST: also a body without
 * `-X`) whose URL is `$B` (or an origin) followed by the path, or the route named in prose as
 * `` `METHOD /path` ``.
 */
function readmeShows(method: string, template: string): boolean {
  if (README.includes(`\`${method} ${template}\``)) return true;
  const pattern = template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/\"'?\\s]+");
  const url = new RegExp(`(\\$B|https?://[^/\\s"]+)${pattern}(?=[?"'\\s\`]|$)`);
  // A command continued over several lines (`\` at a line's end) is one line here.
  return README.replace(/\\\n\s*/g, " ").split("\n").some((line) => {
    if (!line.includes("curl") || !url.test(line)) return false;
    const given = /-X\s*([A-Z]+)/.exec(line)?.[1];
    if (given !== undefined) return given === method;
    if (method === "GET") return !/(-d |--data|-F |-T |--upload-file)/.test(line);
    return method === "POST" && /(-d |--data|-F |-T |--upload-file)/.test(line);
  });
}

test("every operation of /openapi.json has an example in the README (a curl line, or named where the browser uses it)", async () => {
  const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
  const operations = Object.entries(doc.paths).flatMap(([template, ops]) =>
    Object.keys(ops)
      .filter((m) => ["get", "post", "put", "patch", "delete", "head", "options"].includes(m))
      .map((m) => `${m.toUpperCase()} ${template}`),
  );
  expect(operations.length).toBeGreaterThan(50);
  expect(operations.filter((op) => !readmeShows(op.split(" ")[0]!, op.split(" ")[1]!))).toEqual([]);
});
