/**
 * What a share link's URL, `/s/{token}` (CONTRACT §8), answers to GET and HEAD: the shared
 * file's content with the headers of §3 (ranges, ETag, sandbox), whatever the file's visibility.
 * A GET that starts at byte 0 counts as a download, never past the share's limit. A browser
 * navigation gets the share page instead (share-page.ts), which counts nothing. A share with a
 * password wants it as the password of HTTP Basic authentication (RFC 7617; the user name is
 * ignored), or, from a browser, through the small form this answers with, whose POST leaves an
 * unlock cookie for this share's path only. `?status=1` answers the share's downloads left as
 * JSON ({@link statusReply}), for the share page's script; `?thumbnail=1` (a collection's
 * `?file={id}&thumbnail=1`) the file's thumbnail, which counts nothing (CONTRACT §15).
 */
import { parse as parseCookies } from "cookie";
import { contentDisposition } from "../domain/content-disposition.ts";
import type { FileRecord } from "../domain/file.ts";
import type { FolderRow } from "../domain/folder.ts";
import type { FolderService, ShareListing } from "../service/folders.ts";
import { AppError, toRpcStatus } from "../errors.ts";
import type { Authenticator } from "../auth/principal.ts";
import type { ShareRow } from "../domain/share.ts";
import type { FileContent, FileService } from "../service/files.ts";
import type { OpenItems, ShareService } from "../service/shares.ts";
import type { ThumbnailService } from "../service/thumbnails.ts";
import { thumbnailReply } from "./thumbnail-reply.ts";
import { contentReply, wantsHtml, type ContentReply, type ContentRequest, type Sent } from "./content-reply.ts";
import { sharePasswordPage } from "./pages.ts";
import { folderSharePage, isLinkPreviewer, itemsRoot, sharePage } from "./share-page.ts";
import { pageLocale } from "./page-time.ts";
import { parseQuery } from "../domain/params.ts";
import { formatExpiry } from "../domain/expiry.ts";

export interface ShareContentDeps {
  files: FileService;
  thumbnails: ThumbnailService;
  folders: FolderService;
  shares: ShareService;
  auth: Authenticator;
  baseUrl: () => string;
  /** Now, Unix microseconds (the share page's "expires in"). */
  clockMicros: () => number;
}

/** The cookie a share's password form leaves (Path=/s/{token}: sent to that share only). */
export const SHARE_UNLOCK_COOKIE = "cubby_share_unlock";

/**
 * The unlock cookie's value for a share: a SHA-256 over its ID and its password's hash, which
 * only the database knows; it changes with the password, and needs no server secret, so every
 * instance accepts it.
 */
export function unlockValue(share: ShareRow): string {
  return new Bun.CryptoHasher("sha256").update(`cubby share unlock\0${share.id}\0${share.passwordHash ?? ""}`).digest("base64url");
}

/**
 * The password of an `Authorization: Basic` header (RFC 7617 §2: base64 of `user:password`,
 * UTF-8), or undefined when there is none or it is malformed.
 */
export function basicPassword(authorization: string | null): string | undefined {
  const m = authorization === null ? null : /^Basic[ ]+([A-Za-z0-9+/]+={0,2})[ ]*$/i.exec(authorization);
  if (m === null) return undefined;
  const decoded = Buffer.from(m[1]!, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  return colon === -1 ? undefined : decoded.slice(colon + 1);
}

/**
 * Opens a share URL and decides the answer (a GET from byte 0 is counted here, before a byte is
 * sent): the reply and the content to send, or a reply with a body of its own (the password
 * form, or 401 for scripts).
 * @throws AppError not_found (no such token), gone (deleted, expired, used up, file gone),
 *   resource_exhausted (429: too many wrong passwords from this address), invalid_argument
 *   (a malformed `download` parameter)
 */
export async function shareReply(deps: ShareContentDeps, request: ContentRequest, token: string): Promise<ShareAnswer> {
  const opened = await deps.shares.open(token);
  const share = opened.share;
  if (share.passwordHash !== null && !(await unlocked(deps, request, share))) return { reply: passwordWanted(request) };
  if (request.search === "?status=1") return { reply: statusReply(share, request.method) };
  if (request.search === "?thumbnail=1" && opened.file !== undefined) return { reply: await shareThumbnail(deps, opened.file, request.method) };
  if (opened.items !== undefined) return itemsShareReply(deps, request, share, opened.items);
  if (opened.folder !== undefined) return folderShareReply(deps, request, share, opened.folder);
  if (isPageRequest(request)) {
    const thumbnail = (await deps.thumbnails.available([opened.file])).has(opened.file.id);
    return { reply: sharePage({ share, file: opened.file, sharer: await deps.shares.sharerName(share), nowMicros: deps.clockMicros(), locale: pageLocale(request.headers.get("accept-language")), baseUrl: deps.baseUrl(), thumbnail }, request.method) };
  }
  return fileShareReply(deps, request, share, opened.file);
}

/** What a share URL answers: a reply, with the file's content, or the folder whose ZIP is the body, when it sends one. */
export interface ShareAnswer {
  reply: ContentReply;
  content?: FileContent;
  /** The shared folder, or the items of a share of several, whose files the body is as one ZIP (serving/content.ts writes it). */
  zipOf?: FolderRow | OpenItems;
  /** For a counted download: records it in the share's access log once the answer ended (CONTRACT §15). */
  onSent?: (sent: Sent) => void;
}

/**
 * A shared folder's URL (CONTRACT §12): `?file={id}` one of its files (as a file's share sends
 * it, counted alike); `?download=zip` (and any request that is not a browser's page
 * navigation) the whole folder as one ZIP, counted once when a GET starts it; a browser's
 * navigation the folder's page (share-page.ts folderSharePage), which counts nothing.
 * @throws AppError not_found (no such file in the folder), invalid_argument (`download` other
 *   than `zip`, `0`, `1`), gone (the limit was reached meanwhile)
 */
function folderShareReply(deps: ShareContentDeps, request: ContentRequest, share: ShareRow, folder: FolderRow): Promise<ShareAnswer> {
  return collectionReply(deps, request, share, {
    file: (id) => deps.folders.fileForShare(folder, id),
    listing: (at, after) => deps.folders.shareListing(folder, at, after),
    items: false,
    zip: folder,
    zipName: `${folder.name}.zip`,
    called: "this shared folder",
    all: "the whole folder",
  });
}

/** What a shared folder and a share of several items answer alike through ({@link collectionReply}). */
interface Collection {
  /** One of its files, in it or below it, by ID; undefined when it holds no such file. */
  file(id: string): Promise<FileRecord | undefined>;
  /** Its page's listing at folder `at` (undefined: its top), after the page cursor `after`. @throws not_found */
  listing(at: string | undefined, after: string | undefined): Promise<ShareListing>;
  /** A share of several items (the page's wording, share-page.ts). */
  items: boolean;
  zip: FolderRow | OpenItems;
  zipName: string;
  /** How errors name it ("this shared folder"). */
  called: string;
  /** What its ZIP is, for `download`'s error ("the whole folder"). */
  all: string;
}

/**
 * A collection's URL: `?file={id}` one of its files (as a file's share sends it, counted alike);
 * a browser's page navigation its page at `?folder={id}` (share-page.ts folderSharePage), which
 * counts nothing; `?download=zip`, and any other request, all of it as one ZIP, counted once when
 * a GET starts it.
 * @throws AppError not_found (no such file or folder in it), invalid_argument (`download` other
 *   than `zip`, `0`, `1`), gone (the limit was reached meanwhile)
 */
async function collectionReply(deps: ShareContentDeps, request: ContentRequest, share: ShareRow, collection: Collection): Promise<ShareAnswer> {
  const query = parseQuery(request.search, ["download", "file", "folder", "after", "thumbnail"]);
  const fileId = query.get("file");
  if (fileId !== undefined) {
    const file = await collection.file(fileId);
    if (file === undefined) throw new AppError("not_found", `no such file in ${collection.called}`);
    if (query.has("thumbnail")) {
      if (query.get("thumbnail") !== "1" || query.has("download")) throw new AppError("invalid_argument", "thumbnail: 1, with file={id} and nothing else");
      return { reply: await shareThumbnail(deps, file, request.method) };
    }
    return fileShareReply(deps, request, share, file);
  }
  if (query.has("thumbnail")) throw new AppError("invalid_argument", `thumbnail=1 is asked with file={id}: a file of ${collection.called}`);
  const download = query.get("download");
  if (download === undefined && (wantsHtml(request) || isLinkPreviewer(request.headers.get("user-agent")))) {
    const listing = await collection.listing(query.get("folder"), query.get("after"));
    const thumbnails = await deps.thumbnails.available(listing.files);
    return { reply: folderSharePage({ share, listing, sharer: await deps.shares.sharerName(share), nowMicros: deps.clockMicros(), locale: pageLocale(request.headers.get("accept-language")), baseUrl: deps.baseUrl(), items: collection.items, thumbnails }, request.method) };
  }
  if (download !== undefined && download !== "zip") throw new AppError("invalid_argument", `download: zip for ${collection.all} (or file={id} with 0 or 1 for one file)`);
  return zipReply(deps, request, share, collection.zip, collection.zipName);
}

/** The ZIP of a shared folder or of a share of several items, named `name`: counted when a GET starts it, logged when it ends. */
async function zipReply(deps: ShareContentDeps, request: ContentRequest, share: ShareRow, source: FolderRow | OpenItems, name: string): Promise<ShareAnswer> {
  const headers: Record<string, string> = {
    "content-type": "application/zip",
    "content-disposition": contentDisposition("attachment", name),
    "cache-control": "no-cache, private",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
  };
  if (request.method !== "GET") return { reply: { status: 200, headers }, zipOf: source };
  await deps.shares.countDownload(share, source);
  return { reply: { status: 200, headers }, zipOf: source, onSent: logged(deps, request, share, name) };
}

/** The name of the ZIP of a share of several items (CONTRACT §15 "Download all"). */
export const ITEMS_ZIP_NAME = "shared-files.zip";

/**
 * A share of several items' URL (CONTRACT §15), as a folder's ({@link collectionReply}): its
 * files, or a file in or below one of its folders; its page lists the items, and `?folder={id}`
 * one of its folders or one below them; its ZIP, {@link ITEMS_ZIP_NAME}, is everything.
 */
function itemsShareReply(deps: ShareContentDeps, request: ContentRequest, share: ShareRow, items: OpenItems): Promise<ShareAnswer> {
  const root = itemsRoot(share, items);
  return collectionReply(deps, request, share, {
    file: (id) => deps.folders.fileAmong(items, id),
    async listing(at, after) {
      if (at === undefined) return { trail: [root], folders: items.folders, files: items.files, next: undefined };
      const holder = await deps.folders.rootHolding(items.folders, at);
      if (holder === undefined) throw new AppError("not_found", "no such folder in this share");
      const listing = await deps.folders.shareListing(holder, at, after);
      return { ...listing, trail: [root, ...listing.trail] };
    },
    items: true,
    zip: items,
    zipName: ITEMS_ZIP_NAME,
    called: "this share",
    all: "everything shared",
  });
}

/**
 * A file of a share (the file's own, or one in a shared folder) as the share URL sends it: the
 * content headers of §3, nothing for shared caches; a GET from byte 0 counted as a download.
 */
async function fileShareReply(deps: ShareContentDeps, request: ContentRequest, share: ShareRow, file: FileRecord): Promise<ShareAnswer> {
  const fileReply = contentReply(file, request, undefined, deps.baseUrl());
  // Whoever has the link may read; nothing about the reply is for shared caches.
  const headers: Record<string, string> = { ...fileReply.headers, "cache-control": "no-cache, private", "referrer-policy": "no-referrer" };
  delete headers.vary;
  const reply = { ...fileReply, headers };
  const fromStart = reply.status === 200 || (reply.status === 206 && reply.range?.start === 0);
  if (!(request.method === "GET" && fromStart)) return { reply, content: deps.files.contentOf(file) };
  await deps.shares.countDownload(share, file);
  return { reply, content: deps.files.contentOf(file), onSent: logged(deps, request, share, file.name || file.id) };
}

/** A file's thumbnail through its share (CONTRACT §15): counts no download; checked each time, like the share. */
function shareThumbnail(deps: ShareContentDeps, file: FileRecord, method: string): Promise<ContentReply> {
  return thumbnailReply(deps.thumbnails, file, method, "no-cache, private");
}

/** What records a counted download of `item` in the share's access log when its answer ends. */
function logged(deps: ShareContentDeps, request: ContentRequest, share: ShareRow, item: string): (sent: Sent) => void {
  return (sent) => void deps.shares.recordDownload(share, item, sent, request.clientAddress);
}

/**
 * Whether a share request is a person's browser navigation or a link preview, answered with the
 * share page (CONTRACT §11, §15): `text/html` in `Accept` or a previewer's User-Agent, and no
 * `download` parameter (`?download=0` is the page's own inline preview, `?download=1` its
 * Download button).
 */
function isPageRequest(request: ContentRequest): boolean {
  const asked = wantsHtml(request) || isLinkPreviewer(request.headers.get("user-agent"));
  return asked && (request.search === "" || !parseQuery(request.search, ["download"]).has("download"));
}

/**
 * `?status=1` (CONTRACT §15): the share's downloads as JSON, `{"max_downloads","download_count",
 * "downloads_left","expire_time"}` (`null` limit and left: no limit; `""`: never expires), for
 * the share page's script; counts nothing. A share that no longer serves answers 410 before this.
 */
function statusReply(share: ShareRow, method: string): ContentReply {
  const body = JSON.stringify({
    max_downloads: share.maxDownloads,
    download_count: share.downloadCount,
    downloads_left: share.maxDownloads === null ? null : Math.max(0, share.maxDownloads - share.downloadCount),
    expire_time: formatExpiry(share.expiresAt),
  });
  return {
    status: 200,
    headers: { "content-type": "application/json", "cache-control": "no-store", "referrer-policy": "no-referrer", "content-length": String(Buffer.byteLength(body)) },
    body: method === "HEAD" ? undefined : body,
  };
}

/** The unlock cookie, or a right Basic password (a wrong one counts towards the rate limit). */
async function unlocked(deps: ShareContentDeps, request: ContentRequest, share: ShareRow): Promise<boolean> {
  const cookie = request.headers.get("cookie");
  if (cookie !== null && parseCookies(cookie)[SHARE_UNLOCK_COOKIE] === unlockValue(share)) return true;
  const password = basicPassword(request.headers.get("authorization"));
  if (password === undefined) return false;
  return deps.auth.checkSecret(request.clientAddress, () => deps.shares.passwordMatches(share, password));
}

/** 401: the password form for a browser, or a contract error asking for Basic credentials. */
function passwordWanted(request: ContentRequest): ContentReply {
  if (wantsHtml(request)) return sharePasswordPage(401, "");
  const body = JSON.stringify(toRpcStatus(new AppError("unauthenticated", "this share link needs its password")));
  return {
    status: 401,
    headers: { "content-type": "application/json", "www-authenticate": 'Basic realm="cubby share", charset="UTF-8"', "cache-control": "no-store", "content-length": String(Buffer.byteLength(body)) },
    body,
  };
}

/** For the form's POST: whether `password` is right (counted like a wrong Basic password). */
export async function checkFormPassword(deps: Pick<ShareContentDeps, "shares" | "auth">, clientAddress: string, token: string, password: string): Promise<{ share: ShareRow; ok: boolean }> {
  const { share } = await deps.shares.open(token);
  if (share.passwordHash === null) return { share, ok: true };
  return { share, ok: await deps.auth.checkSecret(clientAddress, () => deps.shares.passwordMatches(share, password)) };
}

