// test-lists: postgres-s3
// CONTRACT §10 ("a tus upload has one writer at a time, and a PATCH answered 204 is stored with
// exactly its bytes"), issue 25 item 1: two PATCHes of one upload at Upload-Offset 0, one all
// `a` and one all `b`, sent at the same moment on connections served by two different workers.
// Before the fix, 6 077 rounds on WORKERS=2 gave 9 answers 500 and 7 answers 204 whose stored
// file held the other request's bytes, and fsck found a committed blob changed after its commit.
//
// Each round: at most one 204; its bytes are the stored file's; the other 409; never a 500. After
// the rounds, `cubby fsck` finds every blob as committed. Both backends (test:postgres-s3 runs
// this file on PostgreSQL + S3, where several instances share the locks).
import { expect, test } from "bun:test";
import { BACKEND } from "../support/backend.ts";
import { childrenOf } from "../support/processes.ts";
import { runCli, startServer } from "../support/server.ts";
import { serverSide } from "../support/sockets.ts";
import { createUpload, TUS } from "../support/tus.ts";
import { RawHttp } from "../support/raw-http.ts";

/**
 * Rounds per WORKERS setting: S3 round trips make a round some ten times slower. Set
 * CUBBY_TEST_RACE_ROUNDS for a longer run by hand.
 */
const ROUNDS = Number(process.env.CUBBY_TEST_RACE_ROUNDS ?? (BACKEND === "postgres-s3" ? 100 : 1000));
const LENGTH = 20_000;

/** A keep-alive connection to `port`, with one request answered on it (so its worker has accepted it). */
async function open(port: number): Promise<RawHttp> {
  const c = await RawHttp.connect(port);
  await request(c, "GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n");
  return c;
}

/** Sends `head` and `body` on `c`; resolves with the response's status and head once its body arrived. */
async function request(c: RawHttp, head: string, body?: Buffer): Promise<{ status: number; headers: string }> {
  c.write(body === undefined ? head : Buffer.concat([Buffer.from(head, "latin1"), body]));
  const response = await c.next(head.slice(0, head.indexOf(" ")));
  return { status: response.status, headers: response.head };
}

for (const workers of [2, 4]) {
  test(`WORKERS=${workers}: ${ROUNDS} pairs of PATCHes of one upload on two workers: one 204 with exactly its bytes stored, the other 409, fsck clean`, async () => {
    await using server = await startServer({ env: { WORKERS: String(workers) } });
    const key = await server.mintKey("race@example.com");
    const pids = childrenOf(server.proc.pid);
    // Connections until every worker serves at least two.
    const byWorker = new Map<number, RawHttp[]>();
    const all: RawHttp[] = [];
    try {
      for (let i = 0; i < 400 && [...byWorker.values()].filter((c) => c.length >= 2).length < pids.length; i++) {
        const c = await open(server.port);
        all.push(c);
        const pid = serverSide(server.port, c.socket.localPort!)?.pid;
        if (pid !== undefined) byWorker.set(pid, [...(byWorker.get(pid) ?? []), c]);
      }
      const workersSeen = [...byWorker.keys()];
      expect(workersSeen.length).toBe(workers);
      const bodies = { a: Buffer.alloc(LENGTH, "a"), b: Buffer.alloc(LENGTH, "b") };
      const outcomes = { "204+409": 0, other: [] as string[], wrongBytes: 0 };
      for (let round = 0; round < ROUNDS; round++) {
        const url = await createUpload(server.url, key, LENGTH);
        const path = new URL(url).pathname;
        // Two different workers, rotating through the pairs.
        const first = workersSeen[round % workers]!;
        const second = workersSeen[(round + 1 + (Math.floor(round / workers) % (workers - 1))) % workers]!;
        const [ca, cb] = [byWorker.get(first)![round % 2]!, byWorker.get(second)![(round + 1) % 2]!];
        const patch = `PATCH ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ntus-resumable: ${TUS["tus-resumable"]}\r\nupload-offset: 0\r\ncontent-type: application/offset+octet-stream\r\ncontent-length: ${LENGTH}\r\n\r\n`;
        const [ra, rb] = await Promise.all([request(ca, patch, bodies.a), request(cb, patch, bodies.b)]);
        const statuses = [ra.status, rb.status].sort().join("+");
        if (statuses === "204+409") outcomes["204+409"]++;
        else outcomes.other.push(statuses);
        for (const [r, letter] of [[ra, "a"], [rb, "b"]] as const) {
          if (r.status !== 204) continue;
          const fileId = /\r\ncubby-file-id: *([^\r]+)/i.exec(r.headers)?.[1];
          const stored = Buffer.from(await (await fetch(`${server.url}/${fileId}`, { headers: { authorization: `Bearer ${key}` } })).arrayBuffer());
          if (!stored.equals(bodies[letter])) outcomes.wrongBytes++;
        }
      }
      expect(outcomes).toEqual({ "204+409": ROUNDS, other: [], wrongBytes: 0 });
    } finally {
      for (const c of all) c.socket.destroy();
    }
    const fsck = await runCli(["fsck", "--data-dir", server.dataDir]);
    expect({ code: fsck.code, stderr: fsck.stderr }).toEqual({ code: 0, stderr: "" });
  }, 600_000);
}
