// FileAppender (storage/file-appender.ts): bytes appended in chunks of any size land in order at
// their offsets while several writes run in the background, and a failed write is reported,
// never lost; the CRC32C it gives is the whole content's. The body reader's chunks are written as
// they are and freed once written, any other is copied; what it holds counts on a body budget.
import { afterAll, expect, test } from "bun:test";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { bodyBudget, ByteBudget } from "../../src/body-budget.ts";
import { crc32c } from "../../src/domain/crc32c.ts";
import { markReleasable } from "../../src/gc-pacer.ts";
import { APPEND_BUFFER_BYTES, FileAppender } from "../../src/storage/file-appender.ts";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-appender-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

test("chunks of every size, 9 MiB in all, land in order after the start offset; end and finish say where it stopped and the CRC32C of it all", async () => {
  const file = path.join(dir, "ordered");
  fs.writeFileSync(file, "keep");
  const source = crypto.getRandomValues(new Uint8Array(9 * APPEND_BUFFER_BYTES + 12_345));
  const handle = await fsp.open(file, "r+");
  const appender = new FileAppender(handle, 4);
  const sizes = [1, 65_536, APPEND_BUFFER_BYTES - 1, 3 * APPEND_BUFFER_BYTES + 7, 0, 500_000];
  for (let at = 0, i = 0; at < source.byteLength; i++) {
    const n = Math.min(sizes[i % sizes.length]!, source.byteLength - at);
    await appender.append(source.subarray(at, at + n));
    at += n;
  }
  expect(appender.end).toBe(4 + source.byteLength);
  expect(await appender.finish()).toEqual({ end: 4 + source.byteLength, crc32c: crc32c(source) });
  await handle.close();
  const stored = fs.readFileSync(file);
  expect({ head: stored.subarray(0, 4).toString(), length: stored.byteLength, same: Buffer.compare(stored.subarray(4), source) === 0 }).toEqual({
    head: "keep",
    length: 4 + source.byteLength,
    same: true,
  });
});

test("a write that fails (a read-only descriptor) is thrown by append or finish, settle waits for the rest, and the budget gets back what it held", async () => {
  const file = path.join(dir, "read-only");
  fs.writeFileSync(file, "");
  const handle = await fsp.open(file, "r");
  const appender = new FileAppender(handle, 0);
  const chunk = new Uint8Array(APPEND_BUFFER_BYTES);
  const failure = await (async () => {
    try {
      for (let i = 0; i < 8; i++) await appender.append(chunk);
      await appender.finish();
    } catch (err) {
      return (err as NodeJS.ErrnoException).code;
    } finally {
      await appender.settle();
    }
    return "no error";
  })();
  await handle.close();
  // What it held (the failed writes' chunks included) is given back to the process's budget.
  expect({ failure, size: fs.statSync(file).size, budget: { held: bodyBudget.held, holders: bodyBudget.holderCount } }).toEqual({ failure: "EBADF", size: 0, budget: { held: 0, holders: 0 } });
});

test("a chunk the body reader marked is written as it is and freed once written; any other is copied, so its owner may reuse it at once", async () => {
  const file = path.join(dir, "ownership");
  const handle = await fsp.open(file, "w+");
  const appender = new FileAppender(handle, 0);
  const marked = crypto.getRandomValues(new Uint8Array(64 * 1024));
  const expected = Buffer.concat([marked, new Uint8Array(1000).fill(7)]);
  markReleasable(marked);
  await appender.append(marked);
  const reused = new Uint8Array(1000).fill(7);
  await appender.append(reused);
  reused.fill(9); // the caller's buffer, reused before anything was written
  const end = (await appender.finish()).end;
  await handle.close();
  expect({ end, same: Buffer.compare(fs.readFileSync(file), expected) === 0, markedAfter: marked.byteLength, reusedAfter: reused.byteLength }).toEqual({
    end: expected.byteLength,
    same: true,
    markedAfter: 0,
    reusedAfter: 1000,
  });
});

test("over a small budget an appender holds at most the budget and one chunk, writes smaller batches, and gives everything back", async () => {
  const file = path.join(dir, "budgeted");
  const handle = await fsp.open(file, "w+");
  const budget = new ByteBudget(256 * 1024);
  const appender = new FileAppender(handle, 0, budget);
  const source = crypto.getRandomValues(new Uint8Array(4 * APPEND_BUFFER_BYTES));
  const CHUNK = 64 * 1024;
  let most = 0;
  for (let at = 0; at < source.byteLength; at += CHUNK) {
    const chunk = source.slice(at, at + CHUNK);
    markReleasable(chunk);
    await appender.append(chunk);
    most = Math.max(most, budget.held);
  }
  const done = await appender.finish();
  await handle.close();
  expect({ done, most: most <= 256 * 1024 + CHUNK, after: { held: budget.held, holders: budget.holderCount }, same: Buffer.compare(fs.readFileSync(file), source) === 0 }).toEqual({
    done: { end: source.byteLength, crc32c: crc32c(source) },
    most: true,
    after: { held: 0, holders: 0 },
    same: true,
  });
});
