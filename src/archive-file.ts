/**
 * The operator's archive file for `cubby export FILE` and `cubby import FILE` (`-`: standard
 * output and input). Export never overwrites a file and never leaves a partial one under FILE:
 * it writes `.FILE.<random>.partial` beside it (owner-only: an archive holds every file and
 * key hash), fsyncs it, and links it to FILE only once complete, which fails if FILE appeared
 * meanwhile.
 */
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { AppError } from "./errors.ts";
import type { ArchiveSink } from "./service/archive-stream.ts";
import { syncDir } from "./storage/blob-memory.ts";
import { PRIVATE_FILE_MODE } from "./storage/permissions.ts";

/** An archive being written: `commit` puts it in place, `abort` removes what was written. */
export interface ArchiveOutput {
  sink: ArchiveSink;
  commit(): Promise<void>;
  abort(): Promise<void>;
}

/** Bytes per read of an archive file. */
const READ_CHUNK_BYTES = 1024 * 1024;

function alreadyExists(target: string): AppError {
  return new AppError("invalid_argument", `${target} already exists; export never overwrites a file`);
}

/**
 * Opens the archive to write (see the module comment).
 * @throws AppError invalid_argument when `target` exists or cannot be created
 */
export async function createArchiveOutput(target: string): Promise<ArchiveOutput> {
  if (target === "-") {
    if (process.stdout.isTTY) throw new AppError("invalid_argument", "refusing to write an archive to a terminal; redirect standard output or name a file");
    return stdoutOutput();
  }
  const file = path.resolve(target);
  if (fs.existsSync(file) || isSymlink(file)) throw alreadyExists(target);
  const partial = path.join(path.dirname(file), `.${path.basename(file)}.${crypto.randomUUID().slice(0, 8)}.partial`);
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(partial, "wx", PRIVATE_FILE_MODE);
  } catch (err) {
    throw new AppError("invalid_argument", `cannot create ${target}: ${(err as Error).message}`);
  }
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await handle.close();
  };
  return {
    sink: {
      async write(bytes) {
        for (let off = 0; off < bytes.byteLength; ) off += (await handle.write(bytes, off, bytes.byteLength - off)).bytesWritten;
      },
    },
    async commit() {
      await handle.sync();
      await close();
      try {
        await placeWithoutOverwriting(partial, file, target);
      } finally {
        await fsp.rm(partial, { force: true });
      }
      await syncDir(path.dirname(file));
    },
    async abort() {
      await close().catch(() => {});
      await fsp.rm(partial, { force: true });
    },
  };
}

/** Makes `partial` appear as `file`: a hard link, which fails if `file` exists. */
async function placeWithoutOverwriting(partial: string, file: string, target: string): Promise<void> {
  try {
    await fsp.link(partial, file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EEXIST") throw alreadyExists(target);
    // File systems without hard links: a rename, after one more look.
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP" && code !== "ENOSYS") throw err;
    if (fs.existsSync(file)) throw alreadyExists(target);
    await fsp.rename(partial, file);
  }
}

function isSymlink(file: string): boolean {
  try {
    return fs.lstatSync(file).isSymbolicLink();
  } catch {
    return false;
  }
}

function stdoutOutput(): ArchiveOutput {
  return {
    sink: {
      write: (bytes) => new Promise<void>((resolve, reject) => void process.stdout.write(bytes, (err) => (err ? reject(err) : resolve()))),
    },
    commit: async () => {},
    abort: async () => {},
  };
}

/**
 * The archive to read, as chunks that are never reused (import stages them without copying).
 * @throws AppError invalid_argument when `source` cannot be opened
 */
export async function openArchiveInput(source: string): Promise<{ chunks: AsyncIterable<Uint8Array>; close(): Promise<void> }> {
  if (source === "-") return { chunks: process.stdin, close: async () => {} };
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(source, "r");
  } catch (err) {
    throw new AppError("invalid_argument", `cannot read ${source}: ${(err as Error).message}`);
  }
  async function* chunks() {
    for (;;) {
      const buffer = Buffer.allocUnsafe(READ_CHUNK_BYTES);
      const { bytesRead } = await handle.read(buffer, 0, READ_CHUNK_BYTES, null);
      if (bytesRead === 0) return;
      yield buffer.subarray(0, bytesRead);
    }
  }
  return { chunks: chunks(), close: () => handle.close() };
}

/**
 * Turns the first SIGINT or SIGTERM into an abort of `signal`, so that an export or import stops
 * at its next chunk and cleans up; a second one ends the process as usual. Dispose to stop
 * listening.
 */
export function interruptible(): { signal: AbortSignal } & Disposable {
  const controller = new AbortController();
  const handlers = (["SIGINT", "SIGTERM"] as const).map((name) => {
    const handler = () => controller.abort(new Error(`stopped by ${name}`));
    process.once(name, handler);
    return [name, handler] as const;
  });
  return {
    signal: controller.signal,
    [Symbol.dispose]: () => {
      for (const [name, handler] of handlers) process.off(name, handler);
    },
  };
}
