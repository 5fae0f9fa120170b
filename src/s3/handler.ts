/**
 * The S3 REST API on cubby's port (CONTRACT §16), served on the exchange (serving/exchange.ts)
 * for any request signed with AWS Signature Version 4 (the dispatch routes by the signature:
 * s3/sigv4.ts isSigV4), path-style: `/{bucket}/{key}`. A bucket is one of the caller's
 * top-level folders, a key's segments are folders and the file's name (s3/object-key.ts), an
 * object is a File: what is put here is a file over REST, in the dashboard and through WebDAV,
 * through the same services, so quotas, MAX_UPLOAD_BYTES, scopes and webhooks hold as there.
 *
 * One table of operations (AWS S3 API Reference, "Actions"): the method, whether the target is
 * the service, a bucket or an object, and the sub-resource in the query select one handler.
 * Every failure is S3's XML error (s3/errors.ts) with S3's code.
 */
import type { Authenticator, RequestLike } from "../auth/principal.ts";
import type { FileRecord } from "../domain/file.ts";
import type { FolderRow } from "../domain/folder.ts";
import { DEFAULT_CONTENT_TYPE, parseMediaType, typeFromName } from "../domain/params.ts";
import type { Principal } from "../domain/principal.ts";
import { AppError } from "../errors.ts";
import { logError } from "../log.ts";
import { contentReply } from "../serving/content-reply.ts";
import { answerContent } from "../serving/content.ts";
import type { Exchange } from "../serving/exchange.ts";
import { answerText } from "../serving/text-answer.ts";
import type { FileService } from "../service/files.ts";
import type { FolderService } from "../service/folders.ts";
import { QuotaExceededError } from "../service/quota.ts";
import { payloadOf } from "./chunked.ts";
import { S3Error, s3ErrorXml, xmlText as escapeXml } from "./errors.ts";
import { childrenNamed, childText, xmlRoot } from "./xml.ts";
import { compareKeys, folderNamed, listEntries, type ListEntry } from "./listing.ts";
import { abortMultipart, completeMultipart, createMultipart, MAX_PARTS, multipartOf, multipartsIn, partEtagOf, partsOf, uploadIdOf, uploadPart, type MultipartDeps } from "./multipart.ts";
import { checkBucketName, checkKey, segmentsOf, targetOf } from "./object-key.ts";
import { isSigV4, parseSigV4, verifySigV4, type SigV4Claim, type SignedRequestParts } from "./sigv4.ts";

/** What the S3 endpoint is served with. */
export interface S3Deps extends MultipartDeps {
  auth: Authenticator;
  folders: FolderService;
  files: FileService;
  /** Public origin (HOSTNAME), without a trailing slash. */
  baseUrl: () => string;
}

/** S3's XML namespace (AWS S3 API Reference). */
const NS = "http://s3.amazonaws.com/doc/2006-03-01/";
const XML_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n';
/** ListObjects' max-keys: S3's default and cap. */
const MAX_KEYS = 1000;
/** Buckets ListBuckets answers at most (it has no paging here): top-level folders past it are not listed. */
const MAX_BUCKETS = 10_000;
/** Keys one DeleteObjects takes (S3's limit). */
const MAX_DELETE_KEYS = 1000;
/** The ETag S3 gives an empty object (MD5 of nothing): a directory marker's. */
const EMPTY_ETAG = '"d41d8cd98f00b204e9800998ecf8427e"';

/** One request as the operations see it. */
interface S3Request {
  deps: S3Deps;
  ex: Exchange;
  principal: Principal;
  claim: SigV4Claim;
  signingKey: Awaited<ReturnType<typeof verifySigV4>>["signingKey"];
  query: URLSearchParams;
  bucket: string | undefined;
  key: string | undefined;
}

type Operation = (r: S3Request) => Promise<void>;

/**
 * The operation for a request: by method, target (service, bucket, object) and sub-resource.
 * undefined: one cubby does not serve (NotImplemented).
 */
function operationOf(method: string, bucket: string | undefined, key: string | undefined, q: URLSearchParams): Operation | undefined {
  if (bucket === undefined) return method === "GET" ? listBuckets : undefined;
  if (key === undefined) {
    switch (method) {
      case "PUT":
        return q.size === 0 ? createBucket : undefined;
      case "HEAD":
        return headBucket;
      case "DELETE":
        return q.size === 0 ? deleteBucket : undefined;
      case "POST":
        return q.has("delete") ? deleteObjects : undefined;
      case "GET":
        if (q.has("location")) return getBucketLocation;
        if (q.has("uploads")) return listMultipartUploads;
        if (q.has("versioning")) return getBucketVersioning;
        if (["acl", "policy", "cors", "lifecycle", "tagging", "website", "encryption", "object-lock", "replication", "notification", "logging"].some((s) => q.has(s))) return undefined;
        return q.get("list-type") === "2" ? listObjectsV2 : listObjectsV1;
    }
    return undefined;
  }
  switch (method) {
    case "PUT":
      if (q.has("uploadId")) return q.has("partNumber") && !q.has("x-amz-copy-source") ? putPart : undefined;
      if (q.has("tagging") || q.has("acl") || q.has("retention") || q.has("legal-hold")) return undefined;
      return putObject;
    case "GET":
    case "HEAD":
      if (q.has("uploadId")) return method === "GET" ? listParts : undefined;
      if (q.has("tagging") || q.has("acl") || q.has("attributes") || q.has("torrent")) return undefined;
      return getObject;
    case "DELETE":
      return q.has("uploadId") ? abortUpload : deleteObject;
    case "POST":
      if (q.has("uploads")) return createUpload;
      if (q.has("uploadId")) return completeUpload;
      return undefined;
  }
  return undefined;
}

/**
 * Whether a request is S3's (the dispatch routes it here): signed with Signature Version 4, or
 * with another AWS scheme (the retired Version 2's `Authorization: AWS id:sig` or
 * `AWSAccessKeyId` and `Signature` in the query, as old boto3 presigns by default; SigV4a's
 * `AWS4-ECDSA-P256-SHA256`), which is answered with an error saying what cubby takes rather than
 * as a request to the path.
 * @param rawQuery the query as sent, without `?`
 */
export function isS3Request(authorization: string | null, rawQuery: string): boolean {
  if (authorization !== null) return /^AWS[4 ]/.test(authorization);
  if (rawQuery === "") return false;
  return isSigV4(null, rawQuery) || rawQuery.includes("X-Amz-Algorithm=") || (rawQuery.includes("AWSAccessKeyId=") && rawQuery.includes("Signature="));
}

/** Answers one S3 request (its context opened by the dispatch); never rejects. */
export async function serveS3(deps: S3Deps, ex: Exchange): Promise<void> {
  const resource = ex.pathname;
  try {
    const parts: SignedRequestParts = { method: ex.method, rawPath: ex.pathname, rawQuery: ex.search.slice(1), headers: ex.headers };
    if (!isSigV4(parts.headers.get("authorization"), parts.rawQuery)) {
      throw new S3Error(400, "InvalidRequest", "cubby takes AWS Signature Version 4 only: configure the client for s3v4 (boto3: Config(signature_version=\"s3v4\"); s3cmd: signature_v2 = False)");
    }
    const claim = parseSigV4(parts, Date.now());
    let signingKey: S3Request["signingKey"] | undefined;
    const request: RequestLike = { method: ex.method, headers: ex.headers, clientAddress: ex.clientAddress, context: ex.context };
    const checked = await deps.auth.s3(request, claim.accessKeyId, async (secret) => {
      try {
        signingKey = (await verifySigV4(parts, claim, secret)).signingKey;
        return true;
      } catch (err) {
        if (err instanceof S3Error && err.code === "SignatureDoesNotMatch") return false;
        throw err;
      }
    });
    if ("refused" in checked) {
      // resource_exhausted: answered SlowDown with its Retry-After (fromAppError).
      if (checked.refused === "limited") throw new AppError("resource_exhausted", "too many failed authentications from this address; wait and retry", { retryAfterSeconds: checked.retryAfterSeconds });
      if (checked.refused === "unknown") throw new S3Error(403, "InvalidAccessKeyId", "the access key ID is not a live S3 access key of this cubby (revoked, expired or never minted: cubby keys create --s3)");
      throw new S3Error(403, "SignatureDoesNotMatch", "the request signature we calculated does not match the signature you provided; check your secret access key and signing method");
    }
    const query = new URLSearchParams(parts.rawQuery);
    // The query is S3's; the content path reads `download` from it otherwise.
    ex.search = "";
    const { bucket, key } = targetOf(ex.pathname);
    const operation = operationOf(ex.method, bucket, key, query);
    if (operation === undefined) throw new S3Error(501, "NotImplemented", `cubby's S3 endpoint does not implement this request (${ex.method} ${bucket === undefined ? "service" : key === undefined ? "bucket" : "object"}${query.size > 0 ? ` ?${[...query.keys()].join("&")}` : ""}); README "S3" lists what it does`);
    await operation({ deps, ex, principal: checked.principal, claim, signingKey: signingKey!, query, bucket, key });
  } catch (err) {
    if (!ex.gone) answerError(ex, err, resource);
  }
}

/** S3's error for what an operation threw: S3Error as it is, AppError mapped to S3's codes. */
function answerError(ex: Exchange, err: unknown, resource: string): void {
  let s3: S3Error;
  let retryAfter: number | undefined;
  if (err instanceof S3Error) s3 = err;
  else if (err instanceof QuotaExceededError) s3 = new S3Error(403, "QuotaExceeded", err.message);
  else if (err instanceof AppError) {
    retryAfter = err.retryAfterSeconds;
    s3 = fromAppError(err);
  } else {
    logError(`s3 ${ex.method} ${resource}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    s3 = new S3Error(500, "InternalError", "we encountered an internal error; please try again");
  }
  const headers: Record<string, string> = { "content-type": "application/xml" };
  if (retryAfter !== undefined) headers["retry-after"] = String(retryAfter);
  ex.respond(s3.status, headers, ex.method === "HEAD" ? "" : s3ErrorXml(s3, resource, ex.context.requestId));
}

/** S3's error for a service's AppError. */
function fromAppError(err: AppError): S3Error {
  switch (err.code) {
    case "not_found":
      return new S3Error(404, "NoSuchKey", err.message);
    case "permission_denied":
      return new S3Error(403, "AccessDenied", err.message);
    case "unauthenticated":
      return new S3Error(403, "AccessDenied", err.message);
    case "payload_too_large":
      return new S3Error(400, "EntityTooLarge", err.message);
    case "already_exists":
      return new S3Error(409, "OperationAborted", err.message);
    case "resource_exhausted":
      return new S3Error(503, "SlowDown", err.message);
    case "checksum_mismatch":
      return new S3Error(400, "BadDigest", err.message);
    case "invalid_argument":
    case "failed_precondition":
    case "aborted":
      return new S3Error(400, "InvalidArgument", err.message);
    default:
      return new S3Error(500, "InternalError", err.message);
  }
}

// ---- the service and buckets ----

/** ListBuckets: the caller's top-level folders, in name order. */
async function listBuckets(r: S3Request): Promise<void> {
  const { deps, principal } = r;
  async function* parts(): AsyncIterable<string> {
    yield `${XML_HEAD}<ListAllMyBucketsResult xmlns="${NS}"><Owner><ID>${escapeXml(principal.userId)}</ID><DisplayName>${escapeXml(principal.userId)}</DisplayName></Owner><Buckets>`;
    let after: string | undefined;
    let listed = 0;
    while (listed < MAX_BUCKETS) {
      const rows = await deps.folders.childrenByKey(principal, null, 500, after);
      yield rows.map((f) => `<Bucket><Name>${escapeXml(f.name)}</Name><CreationDate>${iso(f.createdAt)}</CreationDate></Bucket>`).join("");
      listed += rows.length;
      if (rows.length < 500) break;
      after = `${rows[rows.length - 1]!.name}/`;
    }
    yield "</Buckets></ListAllMyBucketsResult>";
  }
  await answerText(r.ex, 200, { "content-type": "application/xml" }, parts());
}

/** The caller's bucket folder `name` (default: the request's bucket). @throws S3Error NoSuchBucket */
async function bucketFolder(r: S3Request, name = r.bucket!): Promise<FolderRow> {
  const folder = await folderNamed(r.deps.folders, r.principal, null, name);
  if (folder === undefined) throw new S3Error(404, "NoSuchBucket", `the bucket does not exist: make it with CreateBucket, or a top-level folder named "${name}"`);
  return folder;
}

/** CreateBucket: a new top-level folder (its body, a location constraint, is read and ignored). */
async function createBucket(r: S3Request): Promise<void> {
  await drain(r);
  const entries = await r.deps.folders.entriesNamed(r.principal, null, r.bucket!);
  if (entries.some((e) => e.kind === "folder")) throw new S3Error(409, "BucketAlreadyOwnedByYou", "you have a top-level folder of that name already");
  try {
    await r.deps.folders.create(r.principal, { name: r.bucket!, parentId: null });
  } catch (err) {
    if (err instanceof AppError && err.code === "already_exists") throw new S3Error(409, "BucketAlreadyOwnedByYou", err.message);
    throw err;
  }
  r.ex.respond(200, { location: `/${encodeURIComponent(r.bucket!)}`, "content-length": "0" });
}

/** HeadBucket. */
async function headBucket(r: S3Request): Promise<void> {
  await bucketFolder(r);
  r.ex.respond(200, { "x-amz-bucket-region": r.claim.region, "content-length": "0" });
}

/** DeleteBucket: only an empty one (no files or folders in it; its unfinished multipart uploads end with their 24 hours). */
async function deleteBucket(r: S3Request): Promise<void> {
  const folder = await bucketFolder(r);
  const files = await r.deps.folders.listFiles(r.principal, folder.id, 1, undefined);
  const subs = await r.deps.folders.childrenByKey(r.principal, folder.id, 1, undefined);
  if (files.files.length > 0 || subs.length > 0) throw new S3Error(409, "BucketNotEmpty", "the bucket you tried to delete is not empty");
  await r.deps.folders.delete(r.principal, folder.id);
  r.ex.respond(204, {});
}

/** GetBucketLocation: the region the request was signed for (cubby has one place). */
async function getBucketLocation(r: S3Request): Promise<void> {
  await bucketFolder(r);
  const region = r.claim.region === "us-east-1" ? "" : escapeXml(r.claim.region);
  r.ex.respond(200, { "content-type": "application/xml" }, `${XML_HEAD}<LocationConstraint xmlns="${NS}">${region}</LocationConstraint>`);
}

/** GetBucketVersioning: never enabled. */
async function getBucketVersioning(r: S3Request): Promise<void> {
  await bucketFolder(r);
  r.ex.respond(200, { "content-type": "application/xml" }, `${XML_HEAD}<VersioningConfiguration xmlns="${NS}"/>`);
}

// ---- listings ----

/** The listing parameters both versions share. @throws S3Error InvalidArgument */
function listingParams(r: S3Request): { prefix: string; delimiter: string; maxKeys: number; url: boolean } {
  const prefix = r.query.get("prefix") ?? "";
  const delimiter = r.query.get("delimiter") ?? "";
  if (delimiter !== "" && delimiter !== "/") throw new S3Error(400, "InvalidArgument", "cubby lists with the delimiter '/' or none: keys are folder paths");
  const rawMax = r.query.get("max-keys");
  const maxKeys = rawMax === null ? MAX_KEYS : /^\d{1,7}$/.test(rawMax) ? Math.min(Number(rawMax), MAX_KEYS) : -1;
  if (maxKeys < 0) throw new S3Error(400, "InvalidArgument", "max-keys: a whole number");
  const encoding = r.query.get("encoding-type");
  if (encoding !== null && encoding !== "url") throw new S3Error(400, "InvalidArgument", "encoding-type: url or none");
  return { prefix, delimiter, maxKeys, url: encoding === "url" };
}

/**
 * A page of a listing: up to `maxKeys` entries after `after`, whether more follow, and where the
 * next page starts (the last key, or where a walk paused: listing.ts MAX_FOLDER_VISITS).
 */
async function pageOf(r: S3Request, prefix: string, delimited: boolean, after: string | undefined, maxKeys: number): Promise<{ entries: ListEntry[]; truncated: boolean; next: string | undefined }> {
  const folder = await bucketFolder(r);
  const entries: ListEntry[] = [];
  if (maxKeys === 0) return { entries, truncated: false, next: undefined };
  for await (const e of listEntries(r.deps.folders, r.principal, folder.id, prefix, after, delimited)) {
    if (e.pause) return { entries, truncated: true, next: e.key };
    if (entries.length === maxKeys) return { entries, truncated: true, next: entries[entries.length - 1]!.key };
    entries.push(e);
  }
  return { entries, truncated: false, next: undefined };
}

/** The XML of a page's entries (Contents, then CommonPrefixes, as S3 orders them). */
function entriesXml(entries: readonly ListEntry[], enc: (s: string) => string): string {
  let contents = "";
  let prefixes = "";
  for (const e of entries) {
    if (e.file === undefined) prefixes += `<CommonPrefixes><Prefix>${enc(e.key)}</Prefix></CommonPrefixes>`;
    else contents += `<Contents><Key>${enc(e.key)}</Key><LastModified>${iso(e.file.updatedAt)}</LastModified><ETag>${escapeXml(objectEtag(e.file))}</ETag><Size>${e.file.size}</Size><StorageClass>STANDARD</StorageClass></Contents>`;
  }
  return contents + prefixes;
}

/** Text for the XML, URL-encoded with `encoding-type=url` (S3 encodes keys so any byte survives XML). */
function encoder(url: boolean): (s: string) => string {
  return url ? (s) => escapeXml(encodeURIComponent(s).replace(/%2F/g, "/")) : escapeXml;
}

/** ListObjectsV2 (continuation-token, start-after). */
async function listObjectsV2(r: S3Request): Promise<void> {
  const { prefix, delimiter, maxKeys, url } = listingParams(r);
  const token = r.query.get("continuation-token");
  const startAfter = r.query.get("start-after") ?? "";
  let after: string | undefined = startAfter === "" ? undefined : startAfter;
  if (token !== null) {
    const decoded = Buffer.from(token, "base64url").toString("utf8");
    if (token === "" || Buffer.from(decoded).toString("base64url") !== token) throw new S3Error(400, "InvalidArgument", "the continuation token is not one this listing gave");
    after = decoded;
  }
  const { entries, truncated, next } = await pageOf(r, prefix, delimiter === "/", after, maxKeys);
  const enc = encoder(url);
  const body =
    `${XML_HEAD}<ListBucketResult xmlns="${NS}"><Name>${escapeXml(r.bucket!)}</Name><Prefix>${enc(prefix)}</Prefix>` +
    (startAfter === "" ? "" : `<StartAfter>${enc(startAfter)}</StartAfter>`) +
    (token === null ? "" : `<ContinuationToken>${escapeXml(token)}</ContinuationToken>`) +
    `<KeyCount>${entries.length}</KeyCount><MaxKeys>${maxKeys}</MaxKeys>` +
    (delimiter === "" ? "" : `<Delimiter>${enc(delimiter)}</Delimiter>`) +
    (url ? "<EncodingType>url</EncodingType>" : "") +
    `<IsTruncated>${truncated}</IsTruncated>` +
    (next === undefined ? "" : `<NextContinuationToken>${Buffer.from(next).toString("base64url")}</NextContinuationToken>`) +
    entriesXml(entries, enc) +
    "</ListBucketResult>";
  r.ex.respond(200, { "content-type": "application/xml" }, body);
}

/** ListObjects (version 1: marker). */
async function listObjectsV1(r: S3Request): Promise<void> {
  const { prefix, delimiter, maxKeys, url } = listingParams(r);
  const marker = r.query.get("marker") ?? "";
  const { entries, truncated, next } = await pageOf(r, prefix, delimiter === "/", marker === "" ? undefined : marker, maxKeys);
  const enc = encoder(url);
  const body =
    `${XML_HEAD}<ListBucketResult xmlns="${NS}"><Name>${escapeXml(r.bucket!)}</Name><Prefix>${enc(prefix)}</Prefix><Marker>${enc(marker)}</Marker>` +
    `<MaxKeys>${maxKeys}</MaxKeys>` +
    (delimiter === "" ? "" : `<Delimiter>${enc(delimiter)}</Delimiter>`) +
    (url ? "<EncodingType>url</EncodingType>" : "") +
    `<IsTruncated>${truncated}</IsTruncated>` +
    (next === undefined ? "" : `<NextMarker>${enc(next)}</NextMarker>`) +
    entriesXml(entries, enc) +
    "</ListBucketResult>";
  r.ex.respond(200, { "content-type": "application/xml" }, body);
}

// ---- objects ----

/** The file at `key` in bucket folder `bucketId`, or undefined (a key ending in `/` names none). */
async function objectAt(r: S3Request, bucketId: string, key: string): Promise<FileRecord | undefined> {
  if (key.endsWith("/")) return undefined;
  const segments = segmentsOf(key);
  const name = segments.pop()!;
  let folderId = bucketId;
  for (const segment of segments) {
    const folder = await folderNamed(r.deps.folders, r.principal, folderId, segment);
    if (folder === undefined) return undefined;
    folderId = folder.id;
  }
  // Inside a folder a name is one file's at most.
  const file = (await r.deps.folders.entriesNamed(r.principal, folderId, name)).find((e) => e.kind === "file");
  return file?.kind === "file" ? file.file : undefined;
}

const noSuchKey = () => new S3Error(404, "NoSuchKey", "the specified key does not exist");

/**
 * An object's ETag: the content URL's (`"{blob}"`, new with new content) with `-1`, the form of a
 * multipart upload's ETag, so that clients which compare an ETag without a `-` to the MD5 of
 * what they sent (s3cmd; rclone where it is 32 hex digits) do not take it for one.
 */
export function objectEtag(file: FileRecord): string {
  return `"${file.blob}-1"`;
}

/** An entity tag list (If-Match, If-None-Match, If-Range) with S3's ETags as the content URL's. */
function contentEtags(list: string): string {
  return list.replace(/"([^"]*)-1"/g, '"$1"');
}

/**
 * GetObject and HeadObject: the content path's answer (ranges, If-None-Match, If-Modified-Since,
 * If-Range) under S3's ETag, after S3's If-Match and If-Unmodified-Since (RFC 9110 §13.1.1,
 * §13.1.4: 412 PreconditionFailed).
 */
async function getObject(r: S3Request): Promise<void> {
  const file = await objectAt(r, (await bucketFolder(r)).id, r.key!);
  if (file === undefined) throw noSuchKey();
  const etag = objectEtag(file);
  const match = r.ex.headers.get("if-match");
  if (match !== null && match.trim() !== "*" && !match.split(",").some((t) => t.trim() === etag)) throw new S3Error(412, "PreconditionFailed", "If-Match does not hold");
  const unmodified = match === null ? r.ex.headers.get("if-unmodified-since") : null;
  if (unmodified !== null && !Number.isNaN(Date.parse(unmodified)) && Math.floor(file.updatedAt / 1_000_000) * 1000 > Date.parse(unmodified)) {
    throw new S3Error(412, "PreconditionFailed", "the object was modified after If-Unmodified-Since");
  }
  const headers = r.ex.headers;
  const request = {
    method: r.ex.method,
    context: r.ex.context,
    pathname: r.ex.pathname,
    search: "",
    clientAddress: r.ex.clientAddress,
    headers: { get: (name: string) => (name === "if-none-match" || name === "if-range" ? (headers.get(name) === null ? null : contentEtags(headers.get(name)!)) : headers.get(name)) },
  };
  const reply = contentReply(file, request, undefined, r.deps.baseUrl());
  await answerContent(r.ex, { reply: { ...reply, headers: reply.headers.etag === undefined ? reply.headers : { ...reply.headers, etag } }, content: r.deps.files.contentOf(file) });
}

/**
 * The folder a key's file goes in, made as needed (`mkdir -p` below the bucket), and the name.
 * @throws S3Error NoSuchBucket; InvalidArgument where a segment names a file
 */
async function placeOf(r: S3Request, key: string): Promise<{ folderId: string; name: string | undefined }> {
  let folderId = (await bucketFolder(r)).id;
  const segments = segmentsOf(key);
  const name = key.endsWith("/") ? undefined : segments.pop();
  for (const segment of segments) {
    const entries = await r.deps.folders.entriesNamed(r.principal, folderId, segment);
    const existing = entries.find((e) => e.kind === "folder");
    if (existing?.kind === "folder") {
      folderId = existing.folder.id;
      continue;
    }
    if (entries.length > 0) throw new S3Error(409, "InvalidArgument", `"${segment}" is a file here, not a folder: a key cannot go below it`);
    try {
      folderId = (await r.deps.folders.create(r.principal, { name: segment, parentId: folderId })).id;
    } catch (err) {
      // Another request made it first: use theirs.
      if (!(err instanceof AppError && err.code === "already_exists")) throw err;
      const again = await folderNamed(r.deps.folders, r.principal, folderId, segment);
      if (again === undefined) throw err;
      folderId = again.id;
    }
  }
  return { folderId, name };
}

/** The object's bytes as declared before they are read: Content-Length, or aws-chunked's decoded length. @throws S3Error MissingContentLength, EntityTooLarge */
function declaredLength(r: S3Request): number {
  const raw = r.ex.headers.get("x-amz-decoded-content-length") ?? r.ex.headers.get("content-length");
  if (raw === null || !/^\d{1,16}$/.test(raw)) throw new S3Error(411, "MissingContentLength", "send Content-Length (or x-amz-decoded-content-length with aws-chunked)");
  const n = Number(raw);
  if (n > r.deps.maxUploadBytes) throw new S3Error(400, "EntityTooLarge", `the object is ${n} bytes, over MAX_UPLOAD_BYTES (${r.deps.maxUploadBytes})`);
  return n;
}

/** The request body as the object's bytes: aws-chunked decoded, every signature and checksum checked (s3/chunked.ts). */
function payload(r: S3Request): AsyncIterable<Uint8Array> {
  return payloadOf(r.ex.body(), r.claim, r.signingKey, r.ex.headers);
}

/** The media type of a new object: the one sent (octet-stream counting as none), else the name's (CONTRACT §17). */
function contentTypeOf(r: S3Request, name: string, before?: string): string {
  const sent = parseMediaType(r.ex.headers.get("content-type"));
  return (sent.toLowerCase() === DEFAULT_CONTENT_TYPE ? undefined : sent) ?? typeFromName(name) ?? before ?? DEFAULT_CONTENT_TYPE;
}

/** PutObject (plain or aws-chunked), CopyObject (x-amz-copy-source), or a directory marker (`key/`, empty). */
async function putObject(r: S3Request): Promise<void> {
  if (r.ex.headers.get("x-amz-copy-source") !== null) return copyObject(r);
  declaredLength(r);
  const { folderId, name } = await placeOf(r, r.key!);
  if (name === undefined) {
    // `a/b/` made the folders; a marker holds nothing.
    for await (const chunk of payload(r)) if (chunk.byteLength > 0) throw new S3Error(400, "InvalidArgument", "a key ending in '/' is a folder: it holds no bytes");
    r.ex.respond(200, { etag: EMPTY_ETAG, "content-length": "0" });
    return;
  }
  const { file } = await r.deps.files.putNamed(r.principal, folderId, name, { contentType: contentTypeOf(r, name), content: payload(r) });
  r.ex.respond(200, { etag: objectEtag(file), "content-length": "0" });
}

/** CopyObject: the source's bytes streamed into the target key (a file of its own). */
async function copyObject(r: S3Request): Promise<void> {
  const raw = r.ex.headers.get("x-amz-copy-source")!;
  let source: string;
  try {
    source = decodeURIComponent(raw.split("?")[0]!).replace(/^\//, "");
  } catch {
    throw new S3Error(400, "InvalidArgument", "x-amz-copy-source is not valid percent-encoded UTF-8");
  }
  const slash = source.indexOf("/");
  if (slash <= 0) throw new S3Error(400, "InvalidArgument", "x-amz-copy-source: bucket/key");
  const file = await objectAt(r, (await bucketFolder(r, checkBucketName(source.slice(0, slash)))).id, checkKey(source.slice(slash + 1)));
  if (file === undefined) throw noSuchKey();
  const match = r.ex.headers.get("x-amz-copy-source-if-match");
  if (match !== null && match.replace(/"/g, "") !== objectEtag(file).replace(/"/g, "")) throw new S3Error(412, "PreconditionFailed", "x-amz-copy-source-if-match does not hold");
  await drain(r);
  const { folderId, name } = await placeOf(r, r.key!);
  if (name === undefined) throw new S3Error(400, "InvalidArgument", "a copy's target key names a file, not a folder");
  const directive = r.ex.headers.get("x-amz-metadata-directive");
  const contentType = directive === "REPLACE" ? contentTypeOf(r, name, file.contentType) : file.contentType;
  const { file: copy } = await r.deps.files.putNamed(r.principal, folderId, name, { contentType, content: file.size === 0 ? null : r.deps.files.copyOf(file) });
  r.ex.respond(200, { "content-type": "application/xml" }, `${XML_HEAD}<CopyObjectResult xmlns="${NS}"><LastModified>${iso(copy.updatedAt)}</LastModified><ETag>${escapeXml(objectEtag(copy))}</ETag></CopyObjectResult>`);
}

/** DeleteObject: 204 whether or not the key was there (S3's answer). */
async function deleteObject(r: S3Request): Promise<void> {
  const file = await objectAt(r, (await bucketFolder(r)).id, r.key!);
  if (file !== undefined) await deleteQuietly(r, file);
  r.ex.respond(204, {});
}

/** Deletes a file, one deleted meanwhile by another request being no failure. */
async function deleteQuietly(r: S3Request, file: FileRecord): Promise<void> {
  try {
    await r.deps.files.delete(r.principal, file.id);
  } catch (err) {
    if (!(err instanceof AppError && err.code === "not_found")) throw err;
  }
}

/** DeleteObjects: up to 1 000 keys of one XML body; each answered Deleted or an Error. */
async function deleteObjects(r: S3Request): Promise<void> {
  const bucket = await bucketFolder(r);
  const root = await xmlRoot(payload(r), "Delete");
  const quiet = childText(root, "Quiet").trim() === "true";
  const keys = childrenNamed(root, "Object").map((o) => childText(o, "Key"));
  if (keys.length === 0 || keys.length > MAX_DELETE_KEYS) throw new S3Error(400, "MalformedXML", `DeleteObjects takes 1 to ${MAX_DELETE_KEYS} keys`);
  let out = "";
  for (const key of keys) {
    try {
      checkKey(key);
      const file = await objectAt(r, bucket.id, key);
      if (file !== undefined) await deleteQuietly(r, file);
      if (!quiet) out += `<Deleted><Key>${escapeXml(key)}</Key></Deleted>`;
    } catch (err) {
      const e = err instanceof S3Error ? err : err instanceof AppError ? fromAppError(err) : new S3Error(500, "InternalError", String(err));
      out += `<Error><Key>${escapeXml(key)}</Key><Code>${e.code}</Code><Message>${escapeXml(e.message)}</Message></Error>`;
    }
  }
  r.ex.respond(200, { "content-type": "application/xml" }, `${XML_HEAD}<DeleteResult xmlns="${NS}">${out}</DeleteResult>`);
}

// ---- multipart ----

/** CreateMultipartUpload. */
async function createUpload(r: S3Request): Promise<void> {
  await drain(r);
  const folder = await bucketFolder(r);
  const name = segmentsOf(r.key!).pop()!;
  if (r.key!.endsWith("/")) throw new S3Error(400, "InvalidArgument", "a key ending in '/' is a folder: it takes no upload");
  const id = await createMultipart(r.deps, r.principal, folder.id, r.key!, contentTypeOf(r, name));
  r.ex.respond(
    200,
    { "content-type": "application/xml" },
    `${XML_HEAD}<InitiateMultipartUploadResult xmlns="${NS}"><Bucket>${escapeXml(r.bucket!)}</Bucket><Key>${escapeXml(r.key!)}</Key><UploadId>${id}</UploadId></InitiateMultipartUploadResult>`,
  );
}

/** The request's multipart upload (`uploadId`). */
async function uploadOf(r: S3Request) {
  const folder = await bucketFolder(r);
  return multipartOf(r.deps, r.principal, folder.id, r.key!, r.query.get("uploadId") ?? "");
}

/** UploadPart. */
async function putPart(r: S3Request): Promise<void> {
  const raw = r.query.get("partNumber") ?? "";
  const number = /^\d{1,5}$/.test(raw) ? Number(raw) : 0;
  if (number < 1 || number > MAX_PARTS) throw new S3Error(400, "InvalidArgument", `partNumber: 1 to ${MAX_PARTS}`);
  const length = declaredLength(r);
  const upload = await uploadOf(r);
  const etag = await uploadPart(r.deps, r.principal, upload, number, length, payload(r));
  r.ex.respond(200, { etag: `"${etag}"`, "content-length": "0" });
}

/** CompleteMultipartUpload. */
async function completeUpload(r: S3Request): Promise<void> {
  const upload = await uploadOf(r);
  const root = await xmlRoot(payload(r), "CompleteMultipartUpload");
  const listed = childrenNamed(root, "Part").map((p) => ({ number: Number(childText(p, "PartNumber")), etag: childText(p, "ETag").trim() }));
  if (listed.length > MAX_PARTS) throw new S3Error(400, "MalformedXML", `at most ${MAX_PARTS} parts`);
  const { folderId, name } = await placeOf(r, r.key!);
  const file = await completeMultipart(r.deps, r.principal, upload, listed, { folderId, name: name! });
  const location = `${r.deps.baseUrl()}/${encodeURIComponent(r.bucket!)}/${r.key!.split("/").map(encodeURIComponent).join("/")}`;
  r.ex.respond(
    200,
    { "content-type": "application/xml" },
    `${XML_HEAD}<CompleteMultipartUploadResult xmlns="${NS}"><Location>${escapeXml(location)}</Location><Bucket>${escapeXml(r.bucket!)}</Bucket><Key>${escapeXml(r.key!)}</Key><ETag>${escapeXml(objectEtag(file))}</ETag></CompleteMultipartUploadResult>`,
  );
}

/** AbortMultipartUpload. */
async function abortUpload(r: S3Request): Promise<void> {
  await abortMultipart(r.deps, r.principal, await uploadOf(r));
  r.ex.respond(204, {});
}

/** ListParts (every finished part: at most 10 000). */
async function listParts(r: S3Request): Promise<void> {
  const upload = await uploadOf(r);
  const { parts } = await partsOf(r.deps, r.principal, upload);
  const marker = Number(r.query.get("part-number-marker") ?? "0") || 0;
  const max = Math.min(Number(r.query.get("max-parts") ?? MAX_KEYS) || MAX_KEYS, MAX_KEYS);
  const after = parts.filter((p) => p.number > marker);
  const page = after.slice(0, max);
  const truncated = after.length > page.length;
  const body =
    `${XML_HEAD}<ListPartsResult xmlns="${NS}"><Bucket>${escapeXml(r.bucket!)}</Bucket><Key>${escapeXml(r.key!)}</Key><UploadId>${uploadIdOf(upload)}</UploadId>` +
    `<PartNumberMarker>${marker}</PartNumberMarker>${truncated ? `<NextPartNumberMarker>${page[page.length - 1]!.number}</NextPartNumberMarker>` : ""}<MaxParts>${max}</MaxParts><IsTruncated>${truncated}</IsTruncated><StorageClass>STANDARD</StorageClass>` +
    page.map((p) => `<Part><PartNumber>${p.number}</PartNumber><LastModified>${iso(p.createdAt)}</LastModified><ETag>&quot;${partEtagOf(p.id)}&quot;</ETag><Size>${p.size}</Size></Part>`).join("") +
    "</ListPartsResult>";
  r.ex.respond(200, { "content-type": "application/xml" }, body);
}

/** ListMultipartUploads of a bucket (at most 1 000, oldest first; prefix filters). */
async function listMultipartUploads(r: S3Request): Promise<void> {
  const folder = await bucketFolder(r);
  const prefix = r.query.get("prefix") ?? "";
  const uploads = (await multipartsIn(r.deps, r.principal, folder.id, MAX_KEYS)).filter((u) => u.key.startsWith(prefix)).sort((a, b) => compareKeys(a.key, b.key));
  const body =
    `${XML_HEAD}<ListMultipartUploadsResult xmlns="${NS}"><Bucket>${escapeXml(r.bucket!)}</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker><Prefix>${escapeXml(prefix)}</Prefix><MaxUploads>${MAX_KEYS}</MaxUploads><IsTruncated>false</IsTruncated>` +
    uploads.map((u) => `<Upload><Key>${escapeXml(u.key)}</Key><UploadId>${uploadIdOf(u)}</UploadId><StorageClass>STANDARD</StorageClass><Initiated>${iso(u.createdAt)}</Initiated></Upload>`).join("") +
    "</ListMultipartUploadsResult>";
  r.ex.respond(200, { "content-type": "application/xml" }, body);
}

// ---- small helpers ----

/** Unix microseconds as S3's timestamps (ISO 8601, milliseconds, `Z`). */
function iso(micros: number): string {
  return new Date(Math.floor(micros / 1000)).toISOString();
}

/** Reads (and checks, as any body) a body the operation ignores. */
async function drain(r: S3Request): Promise<void> {
  for await (const _ of payload(r));
}
