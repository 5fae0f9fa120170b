// test-lists: default
// The PostgreSQL and S3 test harnesses themselves (issue 13): each starts, works with a real
// client, and leaves no process and no directory behind.
import { expect, test } from "bun:test";
import fs from "node:fs";
import { randomBytes } from "node:crypto";
import path from "node:path";
import postgres from "postgres";
import { BUN, cleanEnv, launch } from "../support/launch.ts";
import { startPostgres } from "../support/postgres.ts";
import { childrenOf, isRunning, waitGone } from "../support/processes.ts";
import { startS3 } from "../support/s3.ts";
import { ROOT, tempDir } from "../support/server.ts";

test("startPostgres: a query over TCP with the URL's password, a second database, nothing left after stop", async () => {
  const t0 = performance.now();
  const pg = await startPostgres();
  const firstStart = performance.now() - t0;
  let pids: number[] = [];
  try {
    const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
    expect((await sql`select current_database() as db, current_user as "user", 6 * 7 as n`)[0]).toEqual({ db: "cubby", user: "cubby", n: 42 });
    await sql.end();

    const other = postgres(await pg.createDatabase("suite_two"), { max: 1, onnotice: () => {} });
    await other`create table t (k int primary key, v text)`;
    await other`insert into t values (1, 'one')`;
    expect(await other`select current_database() as db, k, v from t`).toEqual([{ db: "suite_two", k: 1, v: "one" }] as never);
    await other.end();

    pids = [pg.pid, ...childrenOf(pg.pid)];
    expect(pids.length).toBeGreaterThan(3); // checkpointer, background writer, walwriter, …
  } finally {
    await pg.stop();
  }
  expect({ running: pids.filter(isRunning), dirLeft: fs.existsSync(pg.dir) }).toEqual({ running: [], dirLeft: false });

  // Later starts copy this process's template cluster instead of running initdb.
  const t1 = performance.now();
  await using again = await startPostgres();
  const laterStart = performance.now() - t1;
  const sql = postgres(again.url, { max: 1 });
  expect((await sql`select 1 as one`)[0]).toEqual({ one: 1 });
  await sql.end();
  console.log(`startPostgres: first ${Math.round(firstStart)} ms, later ${Math.round(laterStart)} ms`);
}, 60_000);

test("startPostgres: a test process killed with SIGKILL takes its cluster with it (parent-death signal); its directories go at the next start", async () => {
  using dir = tempDir("cubby-harness-");
  const script = path.join(dir.path, "orphan.ts");
  fs.writeFileSync(
    script,
    `import { startPostgres } from ${JSON.stringify(path.join(ROOT, "test/support/postgres.ts"))};
import { childrenOf } from ${JSON.stringify(path.join(ROOT, "test/support/processes.ts"))};
const pg = await startPostgres();
console.log(JSON.stringify({ pids: [pg.pid, ...childrenOf(pg.pid)], dir: pg.dir }));
await Bun.sleep(60_000);
`,
  );
  const child = await launch({ name: "the test process", command: [BUN, script], env: cleanEnv(), ready: /^(.*)\n/, readyTimeoutMs: 30_000 });
  const { pids, dir: clusterDir } = JSON.parse(child.readyMatch![1]!) as { pids: number[]; dir: string };
  expect(pids.every(isRunning)).toBe(true);
  child.kill("SIGKILL");
  await child.exited;
  expect(await waitGone(pids, 10_000)).toBe(true);

  await using pg = await startPostgres();
  expect({ sweptOrphanDir: !fs.existsSync(clusterDir), sameRoot: path.dirname(pg.dir) === path.dirname(clusterDir) }).toEqual({ sweptOrphanDir: true, sameRoot: true });
  // This process makes no new template, so the killed child's would wait for the next one that does.
  const root = path.dirname(clusterDir);
  for (const name of fs.readdirSync(root)) if (name.startsWith(`cubby-pg-template-${child.pid}-`)) fs.rmSync(path.join(root, name), { recursive: true, force: true });
}, 30_000);

test("startS3: a 20 MiB multipart write with Bun's S3Client, a range read, list, presign, delete; nothing left after stop", async () => {
  const t0 = performance.now();
  const s3 = await startS3();
  console.log(`startS3: ${Math.round(performance.now() - t0)} ms`);
  try {
    const client = new Bun.S3Client(s3);
    const partSize = 5 * 1024 * 1024;
    const bytes = randomBytes(4 * partSize);
    const file = client.file("harness/twenty.bin");
    // write() returns no promise: without a flush per part nothing bounds memory.
    const writer = file.writer({ partSize });
    for (let off = 0; off < bytes.length; off += partSize) {
      writer.write(bytes.subarray(off, off + partSize));
      await writer.flush();
    }
    await writer.end();

    const stat = await file.stat();
    expect({ size: stat.size, multipartETag: /-4"?$/.test(stat.etag) }).toEqual({ size: bytes.length, multipartETag: true });
    // A range across the first part boundary.
    const slice = new Uint8Array(await file.slice(partSize - 1000, partSize + 1000).arrayBuffer());
    expect(Buffer.compare(slice, bytes.subarray(partSize - 1000, partSize + 1000))).toBe(0);

    await client.write("harness/small.txt", "hello");
    const listed = await client.list({ prefix: "harness/" });
    expect(listed.contents?.map((o) => [o.key, o.size])).toEqual([
      ["harness/small.txt", 5],
      ["harness/twenty.bin", bytes.length],
    ]);
    // The colon-free key alias is what lets presign() sign correctly.
    const presigned = await fetch(client.presign("harness/small.txt", { expiresIn: 60 }));
    expect({ status: presigned.status, body: await presigned.text() }).toEqual({ status: 200, body: "hello" });

    await file.delete();
    expect(await file.exists()).toBe(false);
    expect((await client.list({ prefix: "harness/" })).contents?.map((o) => o.key)).toEqual(["harness/small.txt"]);
  } finally {
    await s3.stop();
  }
  expect({ running: s3.pids.filter(isRunning), dirLeft: fs.existsSync(s3.dir) }).toEqual({ running: [], dirLeft: false });
}, 120_000);
