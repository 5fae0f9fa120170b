// The single executable: `npm run build` → dist/cubby, copied alone into an empty directory,
// runs there with no node_modules and serves uploads and downloads (issue 2, item 9).
import { afterAll, beforeAll, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { checksumOf } from "../../src/domain/checksum.ts";
import { client, ROOT, runCli, startServer, tempDir } from "../support/server.ts";

let bin: string;
const dir = tempDir("cubby-bin-");
afterAll(() => dir[Symbol.dispose]());

beforeAll(async () => {
  const build = Bun.spawn([process.execPath, "scripts/build.ts"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(build.stdout).text(), new Response(build.stderr).text(), build.exited]);
  if (code !== 0) throw new Error(`build failed:\n${out}\n${err}`);
  bin = path.join(dir.path, "cubby");
  fs.copyFileSync(path.join(ROOT, "dist/cubby"), bin);
  fs.chmodSync(bin, 0o755);
}, 120_000);

test("runs alone from an empty directory: migrations, web page, CRC32C addon all embedded", async () => {
  expect(fs.readdirSync(dir.path)).toEqual(["cubby"]);
  const env = { PATH: "/usr/bin:/bin", NODE_PATH: "" };
  expect((await runCli(["version"], { executable: bin, cwd: dir.path, env })).code).toBe(0);

  await using server = await startServer({ executable: bin, cwd: dir.path, dataDir: path.join(dir.path, "data"), env });
  const api = client(server, await server.mintKey("bin@example.com"));
  const bytes = crypto.getRandomValues(new Uint8Array(3_000_000));
  const file = await api.upload(bytes, "?visibility=public&name=r.bin");
  expect(file.checksum).toBe(checksumOf(bytes));
  const back = new Uint8Array(await (await fetch(file.url)).arrayBuffer());
  expect(Buffer.compare(back, bytes)).toBe(0);
  const page = await fetch(`${server.url}/`);
  expect({ status: page.status, type: page.headers.get("content-type"), hasTitle: (await page.text()).includes("<title>cubby</title>") }).toEqual({
    status: 200,
    type: "text/html; charset=utf-8",
    hasTitle: true,
  });
});

test("start to first /healthz 200, and size (printed for the record)", async () => {
  using data = tempDir();
  const started = performance.now();
  await using server = await startServer({ executable: bin, cwd: dir.path, dataDir: data.path });
  let res: Response;
  do res = await fetch(`${server.url}/healthz`);
  while (res.status !== 200);
  const ms = performance.now() - started;
  const mib = fs.statSync(bin).size / 1024 / 1024;
  console.log(`dist/cubby: ${mib.toFixed(1)} MiB; spawn to first /healthz 200: ${ms.toFixed(0)} ms (includes the test's own spawn overhead)`);
  expect(res.status).toBe(200);
});
