/**
 * A shared folder's ZIP (CONTRACT §12, `/s/{token}?download=zip`): every live file in the folder
 * and below it, STORED (never recompressed), streamed as it is read, one member at a time, with
 * constant memory whatever the folder's size, from either blob store. The ZIP writing itself is
 * zip-stream.ts; this module feeds it the folder's files and writes what it makes on the wire
 * at the pace the client reads.
 */
import type { FileRecord } from "../domain/file.ts";
import type { FolderRow } from "../domain/folder.ts";
import type { OpenItems } from "../service/shares.ts";
import type { ShareContentDeps } from "./share-reply.ts";
import type { Buffering, Outgoing } from "./exchange.ts";
import { blobBytes, CopyPool, zipStream, ZipNames, type ZipMember } from "./zip-stream.ts";

/** Chunks of the archive written and not yet left the process, at most. */
const IN_FLIGHT = 4;

/**
 * Streams the ZIP of `source`, a shared folder or the items of a share of several
 * ({@link filesOf}), on `out` and ends it. Each member's content is read from the store
 * with the wire's buffering, each chunk copied into a buffer of a {@link CopyPool} and the
 * blob's buffer released at once; the copy's buffer goes back to the pool once its write has
 * left. At most {@link IN_FLIGHT} archive chunks wait on the connection. Stops, releasing the
 * blob being read, when the client goes (`out.signal`).
 * @throws what listing the folder or reading a blob throws (the caller resets the answer)
 */
export async function writeFolderZip(out: Outgoing, deps: Pick<ShareContentDeps, "files" | "folders">, source: FolderRow | OpenItems, buffering: Buffering): Promise<void> {
  const signal = out.signal;
  const plan = { ...buffering, signal };
  // The copies' buffers, back once written: the writes in flight, what the ZIP writer and the
  // streams between hold, and the one being filled.
  const pool = new CopyPool(buffering.chunkBytes, IN_FLIGHT + 4);
  /** One ZipNames per directory of the archive, by its path ("" or `sub/`). */
  const directories = new Map<string, ZipNames>();
  const entryName = (path: string, name: string, id: string): string => {
    let names = directories.get(path);
    if (names === undefined) directories.set(path, (names = new ZipNames()));
    // A folder's name holds no "/" but may hold "\", which some unzippers take for one.
    return `${path.replace(/\\/g, "_")}${names.take(name, id)}`;
  };
  async function* members(): AsyncIterable<ZipMember> {
    for await (const { path, file: listed } of filesOf(deps, source)) {
      // The listing reads a page of rows ahead; by the time a slow client reaches this one, its
      // content may have been replaced and the old blob removed: read the row as it is now.
      const file = await deps.files.forShare(listed.id);
      if (file === undefined) continue;
      const content = deps.files.contentOf(file);
      const cached = content.cached;
      yield {
        name: entryName(path, file.name, file.id),
        size: file.size,
        modified: file.updatedAt,
        content: () => (cached !== undefined ? once(cached) : blobBytes(content.read({ start: 0, length: file.size }, plan), pool)),
      };
    }
  }
  let inFlight = 0;
  let drained: (() => void) | undefined;
  for await (const bytes of zipStream(members(), signal)) {
    if (signal.aborted) break;
    inFlight++;
    out.write(bytes, () => {
      pool.giveBack(bytes);
      inFlight--;
      drained?.();
    });
    while (inFlight >= IN_FLIGHT && !signal.aborted) await new Promise<void>((resolve) => (drained = resolve));
    drained = undefined;
  }
  if (!signal.aborted) out.end();
}

/**
 * The files of a shared folder's ZIP with their directories (`""`, `sub/`, …); of a share of
 * several items (CONTRACT §15), its files at the top, then each of its folders' under the
 * folder's name.
 */
async function* filesOf(deps: Pick<ShareContentDeps, "folders">, source: FolderRow | OpenItems): AsyncIterable<{ path: string; file: FileRecord }> {
  if (!("files" in source)) {
    yield* deps.folders.filesForShare(source);
    return;
  }
  for (const file of source.files) yield { path: "", file };
  for (const folder of source.folders) {
    for await (const { path, file } of deps.folders.filesForShare(folder)) yield { path: `${folder.name}/${path}`, file };
  }
}

/** One chunk as an async iterable (a small file's content from the blob cache). */
async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}
