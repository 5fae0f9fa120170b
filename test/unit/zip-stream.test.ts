// The streamed ZIP's behaviour in one process (src/serving/zip-stream.ts): entry names made
// unique and safe, members read one at a time and only as fast as the consumer reads, a consumer
// that stops (cancel or signal) closing what is read, and a member of the wrong size failing
// the archive. What the archive holds is checked with unzip, 7-Zip and Python in
// test/integration/zip-stream.test.ts.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { blobBytes, CopyPool, zipLength, zipStream, ZipNames, type ZipMember } from "../../src/serving/zip-stream.ts";
import { DiskBlobStore } from "../../src/storage/disk-blobs.ts";
import { waitFor } from "../support/wait.ts";

const CHUNK = 64 * 1024;
const MODIFIED = Date.UTC(2026, 4, 17, 12, 30, 44) * 1000;

/** What a member's content did: chunks handed out, whether its `finally` ran. */
interface Trace {
  pulled: number;
  closed: boolean;
}

/** A member whose content is `chunks` chunks of 64 KiB, made as they are asked for, traced. */
function traced(name: string, chunks: number, trace: Trace, size = chunks * CHUNK): ZipMember {
  return {
    name,
    size,
    modified: MODIFIED,
    async *content() {
      try {
        for (let i = 0; i < chunks; i++) {
          trace.pulled++;
          yield new Uint8Array(CHUNK).fill(i);
        }
      } finally {
        trace.closed = true;
      }
    },
  };
}

/** Lets every promise and I/O callback that is ready run: what would be read ahead gets read. */
async function settle(turns = 50): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** One chunk as a stream, as a blob store writes it. */
async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

/** The process's open file descriptors. */
const openFds = () => fs.readdirSync("/proc/self/fd").length;

describe("ZipNames", () => {
  test("names are unique as a case-insensitive file system sees them, never empty, always one segment", () => {
    const names = new ZipNames();
    const rows: [name: string, fallback: string, expected: string][] = [
      ["a.txt", "id1", "a.txt"],
      ["a.txt", "id2", "a (2).txt"],
      ["A.TXT", "id3", "A (3).TXT"],
      ["a (2).txt", "id4", "a (2) (2).txt"],
      ["", "V1StGXR8_Z5jdHi6B-myT", "V1StGXR8_Z5jdHi6B-myT"],
      [".", "id5", "id5"],
      ["..", "id6", "id6"],
      ["../x", "id7", ".._x"],
      ["dir\\evil.exe", "id8", "dir_evil.exe"],
      [".bashrc", "id9", ".bashrc"],
      [".bashrc", "id10", ".bashrc (2)"],
      ["README", "id11", "README"],
      ["readme", "id12", "readme (2)"],
      ["archive.tar.gz", "id13", "archive.tar.gz"],
      ["archive.tar.gz", "id14", "archive.tar (2).gz"],
      ["caf\u00e9.txt", "id15", "caf\u00e9.txt"],
      ["cafe\u0301.txt", "id16", "cafe\u0301 (2).txt"],
      ["", "id1", "id1"], // the fallback is taken like any name: "id1" was free
      ["", "id1", "id1 (2)"],
    ];
    expect(rows.map(([name, fallback]) => names.take(name, fallback))).toEqual(rows.map(([, , expected]) => expected));
  });

  test("each ZipNames is one directory: another one starts empty", () => {
    const a = new ZipNames();
    const b = new ZipNames();
    expect([a.take("x", "1"), a.take("x", "2"), b.take("x", "3")]).toEqual(["x", "x (2)", "x"]);
  });
});

describe("zipStream", () => {
  test("a consumer that reads a few chunks and cancels: the content's finally runs, the later members are never opened, nothing more is read", async () => {
    const first: Trace = { pulled: 0, closed: false };
    let opened = 0;
    let membersClosed = false;
    async function* members(): AsyncIterable<ZipMember> {
      try {
        for (let i = 0; i < 3; i++) {
          opened++;
          yield traced(`m${i}.bin`, 1000, i === 0 ? first : { pulled: 0, closed: false });
        }
      } finally {
        membersClosed = true;
      }
    }
    const reader = zipStream(members()).getReader();
    for (let i = 0; i < 4; i++) expect((await reader.read()).done).toBe(false);
    await reader.cancel(new Error("client went away"));
    await waitFor(() => first.closed && membersClosed, "the content's and the members' finally", { timeoutMs: 5000, pollMs: 0 });
    const pulled = first.pulled;
    await settle();
    expect({ opened, pulled: first.pulled, readAhead: pulled <= 4 + 3 }).toEqual({ opened: 1, pulled, readAhead: true });
  });

  test("a slow consumer: the content is read no further ahead than a few chunks, however long it waits; then the whole archive comes", async () => {
    const trace: Trace = { pulled: 0, closed: false };
    const stream = zipStream([traced("big.bin", 200, trace)]);
    const reader = stream.getReader();
    let bytes = 0;
    for (let i = 0; i < 3; i++) bytes += (await reader.read()).value!.byteLength;
    await settle();
    expect(trace.pulled).toBeLessThanOrEqual(3 + 3);
    for (let r = await reader.read(); !r.done; r = await reader.read()) bytes += r.value.byteLength;
    expect({ pulled: trace.pulled, closed: trace.closed, bytes }).toEqual({ pulled: 200, closed: true, bytes: zipLength([{ name: "big.bin", size: 200 * CHUNK }]) });
  });

  test("the signal fires: the stream errors with its reason, the member and the members are closed", async () => {
    const trace: Trace = { pulled: 0, closed: false };
    let membersClosed = false;
    async function* members(): AsyncIterable<ZipMember> {
      try {
        yield traced("a.bin", 1000, trace);
        yield traced("b.bin", 1, { pulled: 0, closed: false });
      } finally {
        membersClosed = true;
      }
    }
    const abort = new AbortController();
    const reader = zipStream(members(), abort.signal).getReader();
    await reader.read();
    await reader.read();
    abort.abort(new Error("stream reset by the client"));
    await expect(reader.read()).rejects.toThrow("stream reset by the client");
    await waitFor(() => trace.closed && membersClosed, "the content's and the members' finally", { timeoutMs: 5000, pollMs: 0 });
    const pulled = trace.pulled;
    await settle();
    expect(trace.pulled).toBe(pulled);
  });

  test("a signal already aborted: nothing is opened", async () => {
    let opened = 0;
    async function* members(): AsyncIterable<ZipMember> {
      opened++;
      yield traced("a.bin", 1, { pulled: 0, closed: false });
    }
    const abort = new AbortController();
    abort.abort(new Error("gone before the first byte"));
    await expect(zipStream(members(), abort.signal).getReader().read()).rejects.toThrow("gone before the first byte");
    await settle();
    expect(opened).toBe(0);
  });

  test("a member whose content is shorter or longer than its size fails the archive", async () => {
    for (const [chunks, size, message] of [
      [2, 3 * CHUNK, `ZIP member "m.bin": its content ended after ${2 * CHUNK} bytes (its size is ${3 * CHUNK} bytes)`],
      [3, 2 * CHUNK + 1, `ZIP member "m.bin": its content has more than ${2 * CHUNK + 1} bytes (its size is ${2 * CHUNK + 1} bytes)`],
    ] as const) {
      const trace: Trace = { pulled: 0, closed: false };
      const read = Array.fromAsync(zipStream([traced("m.bin", chunks, trace, size)]));
      await expect(read).rejects.toThrow(message);
      expect(trace.closed).toBe(true);
    }
  });

  test("a member that cannot be written (empty name, size not a byte count) fails the archive, and the members are closed", async () => {
    for (const bad of [{ name: "" }, { name: "dir/" }, { size: -1 }, { size: 1.5 }, { modified: Number.NaN }]) {
      let closed = false;
      async function* members(): AsyncIterable<ZipMember> {
        try {
          yield { ...traced("ok.bin", 0, { pulled: 0, closed: false }), ...bad };
        } finally {
          closed = true;
        }
      }
      await expect(Array.fromAsync(zipStream(members()))).rejects.toThrow("ZIP member");
      await waitFor(() => closed, "the members' finally", { timeoutMs: 5000, pollMs: 0 });
    }
  });
});

describe("blobBytes over a disk blob store", () => {
  let dir: string;
  let blobs: DiskBlobStore;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-zip-"));
    blobs = new DiskBlobStore(dir);
  });
  afterEach(async () => {
    await blobs[Symbol.asyncDispose]();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test("copies each chunk and gives the buffer back at once: one buffer reads a whole blob", async () => {
    const content = crypto.getRandomValues(new Uint8Array(5 * CHUNK + 17));
    const blob = await blobs.write(once(content), { maxBytes: Infinity });
    const chunks = await Array.fromAsync(blobBytes(blobs.read(blob.name, { start: 0, length: content.byteLength }, { chunkBytes: CHUNK, buffers: 1 })));
    expect(new Set(chunks.map((c) => c.buffer)).size).toBe(chunks.length); // each a copy of its own
    expect(Buffer.concat(chunks).equals(content)).toBe(true);
  });

  test("a consumer that cancels mid-blob, or whose signal fires: the blob's file is closed", async () => {
    const content = crypto.getRandomValues(new Uint8Array(64 * CHUNK));
    const blob = await blobs.write(once(content), { maxBytes: Infinity });
    const before = openFds();
    for (const how of ["cancel", "signal"] as const) {
      const abort = new AbortController();
      // The read's plan has no signal: closing the file is the archive's doing.
      const plan = { chunkBytes: CHUNK, buffers: 2 };
      const members: ZipMember[] = [{ name: "a.bin", size: content.byteLength, modified: MODIFIED, content: () => blobBytes(blobs.read(blob.name, { start: 0, length: content.byteLength }, plan)) }];
      const reader = zipStream(members, abort.signal).getReader();
      while ((await reader.read()).value!.byteLength !== CHUNK); // the header and name first, then content
      expect(openFds()).toBe(before + 1);
      if (how === "cancel") await reader.cancel();
      else abort.abort();
      await waitFor(() => openFds() === before, `the blob's file closed after a ${how}`, { timeoutMs: 5000, pollMs: 0 });
    }
  });
});

describe("CopyPool", () => {
  test("a copy's buffer comes back once given back; when all are out, a copy is made anyway (never a wait)", () => {
    const pool = new CopyPool(8, 2);
    const a = pool.copy(new Uint8Array([1, 2, 3]));
    const b = pool.copy(new Uint8Array([4]));
    expect([...a, ...b]).toEqual([1, 2, 3, 4]);
    expect(a.buffer).not.toBe(b.buffer);
    const extra = pool.copy(new Uint8Array([5, 6]));
    expect([...extra]).toEqual([5, 6]);
    pool.giveBack(extra); // not one of the pool's: ignored
    pool.giveBack(a);
    const c = pool.copy(new Uint8Array([7, 8, 9, 10]));
    expect(c.buffer).toBe(a.buffer);
    expect([...c]).toEqual([7, 8, 9, 10]);
    pool.giveBack(a); // given back already: ignored, so the buffer is never handed out twice
    const d = pool.copy(new Uint8Array([11]));
    expect(d.buffer).not.toBe(c.buffer);
  });

  test("a chunk larger than the pool's buffers is copied as it is", () => {
    const pool = new CopyPool(4, 2);
    const big = pool.copy(new Uint8Array([1, 2, 3, 4, 5, 6]));
    expect([...big]).toEqual([1, 2, 3, 4, 5, 6]);
  });
});
