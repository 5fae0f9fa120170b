/**
 * The methods that change the tree (RFC 4918 §9.3–§9.9, RFC 9110 §9.3.4): PUT (new content
 * streamed into FileService.create or replaceContent, durable before the answer), MKCOL,
 * DELETE, COPY and MOVE, each checking the locks it must honour and the If header first.
 */
import type { FileRecord } from "../domain/file.ts";
import { DEFAULT_CONTENT_TYPE, parseMediaType, parseName, typeFromName } from "../domain/params.ts";
import { AppError } from "../errors.ts";
import { DavError } from "./errors.ts";
import { lockPathOf } from "./paths.ts";
import { etagOf, type DavRequest } from "./request.ts";
import { folderIdOf, memberPages, propertyKey, type Collection, type Resource } from "./resources.ts";

/**
 * The request body as content, refused when it ends short of its Content-Length (a client that
 * went mid-upload must not leave a truncated file).
 */
async function* bodyOf(req: DavRequest): AsyncIterable<Uint8Array> {
  const declared = req.ex.headers.get("content-length");
  let received = 0;
  for await (const chunk of req.ex.body()) {
    received += chunk.byteLength;
    yield chunk;
  }
  if ((declared !== null && Number(declared) !== received) || req.ex.gone) throw new AppError("invalid_argument", "the request body ended before its Content-Length");
}

/** RFC 9110 §13.1.1–2: If-Match and If-None-Match on a PUT. @throws DavError 412 */
function checkPreconditions(req: DavRequest, resource: Resource | undefined): void {
  const etag = resource === undefined ? undefined : etagOf(resource);
  const match = req.ex.headers.get("if-match");
  if (match !== null) {
    const ok = match.trim() === "*" ? resource !== undefined : match.split(",").some((t) => t.trim() === etag);
    if (!ok) throw new DavError(412, "If-Match does not hold");
  }
  const noneMatch = req.ex.headers.get("if-none-match");
  if (noneMatch !== null) {
    const hit = noneMatch.trim() === "*" ? resource !== undefined : noneMatch.split(",").some((t) => t.trim().replace(/^W\//, "") === etag);
    if (hit) throw new DavError(412, "If-None-Match does not hold");
  }
}

/** Answers PUT: replaces an existing file's content (ID and URL kept) or creates a file in the parent collection. */
export async function put(req: DavRequest): Promise<void> {
  const { resource, parent } = await req.resolve();
  if (resource !== undefined && resource.kind !== "file") throw new DavError(405, "PUT to a collection");
  if (parent === undefined) throw new DavError(409, "the parent collection does not exist");
  checkPreconditions(req, resource);
  await req.checkChange([{ segments: req.segments, kind: resource === undefined ? "membership" : "content" }], resource);
  // Types from names (CONTRACT §17): WebDAV clients (davfs2, Finder, Windows) send
  // application/octet-stream or nothing for every file, so that counts as no type: the name's
  // registered type, else, for a replaced file, the type it had (an edit keeps text/plain).
  const name = parseName(req.segments[req.segments.length - 1]!);
  const sent = parseMediaType(req.ex.headers.get("content-type"));
  const contentType = (sent.toLowerCase() === DEFAULT_CONTENT_TYPE ? undefined : sent) ?? typeFromName(name) ?? resource?.file.contentType ?? DEFAULT_CONTENT_TYPE;
  let file: FileRecord;
  let created = false;
  if (resource !== undefined) {
    file = await req.deps.files.replaceContent(req.principal, resource.file.id, { contentType, content: bodyOf(req) });
  } else {
    // By name, in one transaction: a PUT racing this one for the same new name replaces, not duplicates.
    ({ file, created } = await req.deps.files.putNamed(req.principal, folderIdOf(parent), name, { contentType, content: bodyOf(req) }));
  }
  req.ex.respond(created ? 201 : 204, { etag: `"${file.blob}"`, "content-length": "0" });
}

/** Answers MKCOL: a new folder (RFC 4918 §9.3). */
export async function mkcol(req: DavRequest): Promise<void> {
  if (await hasBody(req)) throw new DavError(415, "MKCOL with a body is not understood");
  const { resource, parent } = await req.resolve();
  if (resource !== undefined) throw new DavError(405, "something exists at this path already");
  if (parent === undefined) throw new DavError(409, "the parent collection does not exist");
  await req.checkChange([{ segments: req.segments, kind: "membership" }], resource);
  await req.deps.folders.create(req.principal, { name: req.segments[req.segments.length - 1]!, parentId: folderIdOf(parent) });
  req.ex.respond(201, { "content-length": "0" });
}

/** Whether the request has a non-empty body (read to its end). */
async function hasBody(req: DavRequest): Promise<boolean> {
  let any = false;
  for await (const chunk of req.ex.body()) if (chunk.byteLength > 0) any = true;
  return any;
}

/** Answers DELETE: a file, or a folder with everything in it (RFC 4918 §9.6.1). */
export async function del(req: DavRequest): Promise<void> {
  const { resource } = await req.resolve();
  if (resource === undefined) throw new DavError(404, "nothing at this path");
  if (resource.kind === "root") throw new DavError(403, "the top cannot be deleted");
  await req.checkChange([{ segments: req.segments, kind: "membership" }], resource);
  await remove(req, req.segments, resource);
  req.ex.respond(204, {});
}

/**
 * Deletes a file or folder (recursively) and the locks rooted at or below it; their dead
 * properties go with their rows (dav_properties' foreign keys).
 */
async function remove(req: DavRequest, segments: string[], resource: Exclude<Resource, { kind: "root" }>): Promise<void> {
  if (resource.kind === "file") await req.deps.files.delete(req.principal, resource.file.id);
  else await req.deps.folders.delete(req.principal, resource.folder.id, { recursive: true });
  await dropLocks(req, segments);
}

/** Deletes the locks rooted at or below `segments` (the resource went, RFC 4918 §9.6), read by path. */
async function dropLocks(req: DavRequest, segments: readonly string[]): Promise<void> {
  const path = lockPathOf(segments);
  const owner = req.principal.userId;
  const now = req.now();
  const gone = [...(await req.deps.store.dav.locksAt(owner, [path], now)), ...(await req.deps.store.dav.locksBelow(owner, path, now))];
  await req.deps.store.dav.deleteLocks(gone.map((l) => l.token));
  req.forgetLocks();
}

/** The Destination of a COPY or MOVE, as segments on this server. @throws DavError 400, 502 */
function destinationOf(req: DavRequest): string[] {
  const raw = req.ex.headers.get("destination");
  if (raw === null) throw new DavError(400, "COPY and MOVE need a Destination header");
  const segments = req.pathOfUri(raw.trim());
  if (segments === undefined) throw new DavError(502, "the Destination is not under this server's /dav/");
  return segments;
}

/** Answers COPY (`move` false) and MOVE (RFC 4918 §9.8, §9.9). */
export async function copyOrMove(req: DavRequest, move: boolean): Promise<void> {
  const depthHeader = req.ex.headers.get("depth")?.trim().toLowerCase() ?? "infinity";
  if (depthHeader !== "infinity" && (move || depthHeader !== "0")) throw new DavError(400, move ? "MOVE takes Depth: infinity" : "COPY takes Depth: 0 or infinity");
  const overwrite = (req.ex.headers.get("overwrite")?.trim().toUpperCase() ?? "T") !== "F";
  const dest = destinationOf(req);
  const { resource } = await req.resolve();
  if (resource === undefined) throw new DavError(404, "nothing at this path");
  if (resource.kind === "root") throw new DavError(403, "the top cannot be copied or moved");
  const from = lockPathOf(req.segments);
  const to = lockPathOf(dest);
  if (from === to) throw new DavError(403, "the source and the destination are the same");
  if (resource.kind === "folder" && to.startsWith(`${from}/`)) throw new DavError(403, "a collection cannot go inside itself");
  // Overwriting a collection that holds the source would delete the source with it.
  if (from.startsWith(`${to}/`)) throw new DavError(403, "the destination holds the source");
  if (dest.length === 0) throw new DavError(403, "the destination cannot be the top");
  const target = await req.resolve(dest);
  if (target.parent === undefined) throw new DavError(409, "the destination's parent collection does not exist");
  const existing = target.resource as Exclude<Resource, { kind: "root" }> | undefined;
  if (existing !== undefined && !overwrite) throw new DavError(412, "the destination exists and Overwrite is F");
  const targets = [{ segments: dest, kind: "membership" as const }];
  if (move) targets.push({ segments: req.segments, kind: "membership" });
  await req.checkChange(targets, resource);
  if (existing !== undefined && sameResource(existing, resource)) throw new DavError(403, "the source and the destination are the same");
  if (existing?.kind === "file" && resource.kind === "file") {
    // A file onto a file (how editors save: a temporary file moved over the real one): the
    // destination keeps its ID and URL and takes the bytes, in one step that changes nothing
    // when it fails.
    if (move) {
      await req.deps.files.moveOnto(req.principal, resource.file.id, existing.file.id);
      await moveProperties(req, propertyKey(resource), propertyKey(existing));
      await dropLocks(req, req.segments);
    } else {
      await req.deps.files.replaceContent(req.principal, existing.file.id, { contentType: resource.file.contentType, content: resource.file.size === 0 ? null : req.deps.files.copyOf(resource.file) });
      await replaceProperties(req, propertyKey(resource), propertyKey(existing));
    }
    req.ex.respond(204, { "content-length": "0" });
    return;
  }
  if (existing !== undefined) await remove(req, dest, existing);
  const name = dest[dest.length - 1]!;
  const parentId = folderIdOf(target.parent);
  if (move) {
    if (resource.kind === "folder") await req.deps.folders.update(req.principal, resource.folder.id, { name, parentId });
    else await moveFile(req, resource.file, resource.folderId, parentId, name);
    await dropLocks(req, req.segments);
  } else if (resource.kind === "file") await copyFile(req, resource.file, parentId, name);
  else await copyFolder(req, resource, parentId, name, depthHeader === "infinity");
  req.ex.respond(existing === undefined ? 201 : 204, { "content-length": "0" });
}

function sameResource(a: Resource, b: Resource): boolean {
  return propertyKey(a) === propertyKey(b);
}

/**
 * Renames a file and puts it in another collection. Two steps (FileService.update, then
 * FolderService.moveFile, or the other way): the order is the one whose first step meets no
 * name in use, so that neither step stops on a name the other was about to free.
 */
async function moveFile(req: DavRequest, file: FileRecord, fromId: string | null, toId: string | null, name: string): Promise<void> {
  checkFileName(name);
  const { files, folders } = req.deps;
  if (fromId === toId) {
    if (name !== file.name) await files.update(req.principal, file.id, { name });
    return;
  }
  const freeHere = fromId === null || (await folders.entriesNamed(req.principal, fromId, name)).length === 0;
  if (freeHere) {
    if (name !== file.name) await files.update(req.principal, file.id, { name });
    await folders.moveFile(req.principal, toId, file.id);
  } else {
    await folders.moveFile(req.principal, toId, file.id);
    if (name !== file.name) await files.update(req.principal, file.id, { name });
  }
}

/** @throws AppError invalid_argument for a name a file cannot have */
function checkFileName(name: string): void {
  parseName(name);
}

/** A new file in `parentId` named `name` with `file`'s bytes (streamed from its blob) and dead properties. */
async function copyFile(req: DavRequest, file: FileRecord, parentId: string | null, name: string): Promise<void> {
  checkFileName(name);
  const copy = await req.deps.files.create(req.principal, {
    slug: "",
    name,
    visibility: undefined,
    contentType: file.contentType,
    content: file.size === 0 ? null : req.deps.files.copyOf(file),
    folderId: parentId ?? undefined,
  });
  await copyProperties(req, propertyKey({ kind: "file", file, folderId: null }), `file:${copy.id}`);
}

/** A new folder in `parentId` named `name` with `source`'s dead properties and, when `deep`, copies of everything in it. */
async function copyFolder(req: DavRequest, source: Collection & { kind: "folder" }, parentId: string | null, name: string, deep: boolean): Promise<void> {
  const created = await req.deps.folders.create(req.principal, { name, parentId });
  await copyProperties(req, propertyKey(source), `folder:${created.id}`);
  if (!deep) return;
  // A page of members at a time: a deep copy holds one page, whatever the tree's size.
  for await (const members of memberPages(req.deps, req.principal, source)) {
    for (const m of members) {
      if (m.resource.kind === "folder") await copyFolder(req, m.resource, created.id, m.resource.folder.name, true);
      else await copyFile(req, m.resource.file, created.id, m.resource.file.name);
    }
  }
}

/** Gives `to` the dead properties of `from` instead of its own (a copy onto an existing resource). */
async function replaceProperties(req: DavRequest, from: string, to: string): Promise<void> {
  await copyProperties(req, from, to, true);
}

/** Moves the dead properties of one resource to another, replacing the other's. */
async function moveProperties(req: DavRequest, from: string, to: string): Promise<void> {
  await replaceProperties(req, from, to);
  await req.deps.store.dav.deleteProperties(req.principal.userId, [from]);
}

/**
 * Copies the dead properties of one resource to another (`replace`: the other's own go first),
 * in one statement, in a transaction that charges the bytes it adds to the owner's quota.
 */
async function copyProperties(req: DavRequest, from: string, to: string, replace = false): Promise<void> {
  const owner = req.principal.userId;
  const added = await req.deps.store.dav.propertyTotals(owner, from);
  if (added.count === 0 && !replace) return;
  await req.deps.store.transaction(async (tx) => {
    const quota = await req.deps.quotas.lock(tx, owner);
    const before = await tx.dav.propertyTotals(owner, to);
    if (replace) await tx.dav.deleteProperties(owner, [to]);
    await tx.dav.copyProperties(owner, from, to);
    await quota.settle((await tx.dav.propertyTotals(owner, to)).bytes - before.bytes);
  });
}
