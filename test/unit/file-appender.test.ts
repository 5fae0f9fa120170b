// FileAppender (storage/file-appender.ts): bytes appended in chunks of any size land in order at
// their offsets while several buffers are written in the background, and a failed write is
// reported, never lost; the CRC32C it gives is the whole content's.
import { afterAll, expect, test } from "bun:test";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { crc32c } from "../../src/domain/crc32c.ts";
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

test("a write that fails (a read-only descriptor) is thrown by append or finish, and settle waits for the rest", async () => {
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
  expect({ failure, size: fs.statSync(file).size }).toEqual({ failure: "EBADF", size: 0 });
});
