/**
 * The request headers of the tus resumable upload protocol 1.0.0
 * (https://tus.io/protocols/resumable-upload), parsed at the edge: each function returns the
 * domain value or throws AppError invalid_argument naming the header, so a bad header is a 400
 * before anything is stored.
 */
import { AppError } from "../errors.ts";

/** The protocol version served (Tus-Resumable, Tus-Version). */
export const TUS_VERSION = "1.0.0";
/** The extensions served, as OPTIONS lists them (Tus-Extension). */
export const TUS_EXTENSIONS = ["creation", "creation-with-upload", "termination", "expiration", "checksum", "concatenation"] as const;
/** Checksum algorithms of the checksum extension (Tus-Checksum-Algorithm). */
export const TUS_CHECKSUM_ALGORITHMS = ["crc32c", "sha1"] as const;
export type TusChecksumAlgorithm = (typeof TUS_CHECKSUM_ALGORITHMS)[number];

/** The largest byte count or offset accepted: 2^53 − 1, the largest exact integer of a JS number. */
export const MAX_TUS_INTEGER = Number.MAX_SAFE_INTEGER;
/** Upload-Metadata longer than this is refused (it is stored with the upload). */
export const MAX_METADATA_CHARS = 16 * 1024;

function invalid(message: string): never {
  throw new AppError("invalid_argument", message);
}

const shown = (s: string) => JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s);

/**
 * A non-negative decimal integer as Upload-Length and Upload-Offset carry it (tus §Headers:
 * "MUST be a non-negative integer"): digits only, no sign, spaces or exponent, at most
 * 2^53 − 1. Leading zeros are accepted (`007` is 7), as a decimal reading would.
 * @throws AppError invalid_argument naming `header`
 */
export function parseTusInteger(raw: string | null, header: string): number {
  if (raw === null) invalid(`${header}: missing`);
  if (!/^[0-9]{1,20}$/.test(raw)) invalid(`${header}: ${shown(raw)} is not a non-negative decimal integer`);
  const n = Number(raw);
  if (n > MAX_TUS_INTEGER) invalid(`${header}: ${raw} is larger than ${MAX_TUS_INTEGER}`);
  return n;
}

/** Upload-Length: the size of the whole upload in bytes. @throws AppError invalid_argument */
export function parseUploadLength(raw: string | null): number {
  return parseTusInteger(raw, "Upload-Length");
}

/** Upload-Offset: the byte offset a PATCH starts at. @throws AppError invalid_argument */
export function parseUploadOffset(raw: string | null): number {
  return parseTusInteger(raw, "Upload-Offset");
}

/** Strict base64 (RFC 4648 §4, with padding; no line breaks, no URL-safe alphabet). */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** The bytes of strict base64, or undefined when `s` is not that (non-canonical trailing bits included). */
export function decodeStrictBase64(s: string): Uint8Array | undefined {
  if (!BASE64.test(s)) return undefined;
  const bytes = Buffer.from(s, "base64");
  // Buffer ignores stray bits in the last character; canonical form round-trips exactly.
  return bytes.toString("base64") === s ? bytes : undefined;
}

/**
 * Upload-Metadata (tus §Creation): comma-separated pairs of a key and a base64 value separated
 * by one space; the value may be left out (with or without its space). Keys are non-empty
 * printable ASCII without spaces or commas and unique; values must be strict base64 of UTF-8
 * text without control characters other than tab.
 * @returns the decoded pairs ("" for a pair without a value); an absent header gives `{}`
 * @throws AppError invalid_argument naming the problem
 */
export function parseUploadMetadata(raw: string | null): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  if (raw === null || raw === "") return { ...out };
  if (raw.length > MAX_METADATA_CHARS) invalid(`Upload-Metadata: at most ${MAX_METADATA_CHARS} characters`);
  for (const pair of raw.split(",")) {
    // Clients join pairs with "," and some with ", ": a space before the key is allowed.
    const item = pair.startsWith(" ") ? pair.slice(1) : pair;
    const space = item.indexOf(" ");
    const key = space === -1 ? item : item.slice(0, space);
    const value = space === -1 ? "" : item.slice(space + 1);
    if (!/^[\x21-\x2B\x2D-\x7E]+$/.test(key)) invalid(`Upload-Metadata: key ${shown(key)} must be non-empty ASCII without spaces or commas`);
    if (Object.hasOwn(out, key)) invalid(`Upload-Metadata: key ${shown(key)} appears twice`);
    const bytes = decodeStrictBase64(value);
    if (bytes === undefined) invalid(`Upload-Metadata: the value of ${shown(key)} is not base64`);
    let text: string;
    try {
      text = UTF8.decode(bytes);
    } catch {
      invalid(`Upload-Metadata: the value of ${shown(key)} is not UTF-8 text`);
    }
    if (/[\x00-\x08\x0A-\x1F\x7F]/.test(text)) invalid(`Upload-Metadata: the value of ${shown(key)} contains control characters`);
    out[key] = text;
  }
  return { ...out };
}

/** Upload-Metadata as a header value again (the HEAD answer echoes what the client sent). */
export function formatUploadMetadata(metadata: Record<string, string>): string {
  return Object.entries(metadata)
    .map(([k, v]) => (v === "" ? k : `${k} ${Buffer.from(v).toString("base64")}`))
    .join(",");
}

/** A checksum a client declared for one PATCH body (tus checksum extension). */
export interface UploadChecksum {
  algorithm: TusChecksumAlgorithm;
  /** The digest's bytes: 4 for crc32c (big-endian), 20 for sha1. */
  digest: Uint8Array;
}

const DIGEST_BYTES: Record<TusChecksumAlgorithm, number> = { crc32c: 4, sha1: 20 };

/**
 * Upload-Checksum: `<algorithm> <base64 digest>`, the algorithm one of
 * {@link TUS_CHECKSUM_ALGORITHMS} (tus: "400 Bad Request if the checksum algorithm is not
 * supported"), the digest strict base64 of the algorithm's length.
 * @returns undefined when the header is absent
 * @throws AppError invalid_argument
 */
export function parseUploadChecksum(raw: string | null): UploadChecksum | undefined {
  if (raw === null) return undefined;
  const m = /^([a-z0-9-]{1,32}) ([A-Za-z0-9+/=]{1,200})$/.exec(raw);
  if (m === null) invalid(`Upload-Checksum: ${shown(raw)} is not "<algorithm> <base64 digest>"`);
  const algorithm = m[1]!;
  if (!(TUS_CHECKSUM_ALGORITHMS as readonly string[]).includes(algorithm)) {
    invalid(`Upload-Checksum: algorithm ${shown(algorithm)} is not supported (${TUS_CHECKSUM_ALGORITHMS.join(", ")})`);
  }
  const digest = decodeStrictBase64(m[2]!);
  const want = DIGEST_BYTES[algorithm as TusChecksumAlgorithm];
  if (digest === undefined || digest.byteLength !== want) invalid(`Upload-Checksum: a ${algorithm} digest is ${want} bytes of base64`);
  return { algorithm: algorithm as TusChecksumAlgorithm, digest };
}

/**
 * Tus-Resumable of a request: must be {@link TUS_VERSION}.
 * @returns whether the request may be processed (else the server answers 412 with Tus-Version)
 */
export function isSupportedTusVersion(raw: string | null): boolean {
  return raw === TUS_VERSION;
}

/** The most partial uploads one final upload may name (tus concatenation). */
export const MAX_CONCAT_PARTS = 100;
/** Upload IDs as the upload service makes them (domain/upload-link.ts newUploadId). */
const UPLOAD_ID = /^[A-Za-z0-9_-]{26}$/;
/** The path of an upload's URL: `/v1/uploads/{id}`, possibly below a proxy's path prefix. */
const UPLOAD_PATH = /\/v1\/uploads\/([^/?#]*)$/;

/**
 * Upload-Concat of a creation (tus concatenation extension): a partial upload, or the final
 * upload made of the named partial uploads in order.
 */
export type UploadConcat = { kind: "partial" } | { kind: "final"; uploadIds: string[] };

/**
 * Upload-Concat: `partial`, or `final;` followed by the partial uploads' URLs separated by
 * spaces (tus: "a list of the URLs of the partial uploads"), each an absolute URL or an absolute
 * path ending in `/v1/uploads/{id}` (the creation's Location, behind any proxy prefix). At most
 * {@link MAX_CONCAT_PARTS}, none twice.
 * @returns undefined when the header is absent
 * @throws AppError invalid_argument naming the problem
 */
export function parseUploadConcat(raw: string | null): UploadConcat | undefined {
  if (raw === null) return undefined;
  if (raw === "partial") return { kind: "partial" };
  if (!raw.startsWith("final;")) invalid(`Upload-Concat: ${shown(raw)} is neither "partial" nor "final;<upload URLs>"`);
  const urls = raw.slice("final;".length).trim().split(/ +/).filter((u) => u !== "");
  if (urls.length === 0) invalid("Upload-Concat: a final upload names at least one partial upload");
  if (urls.length > MAX_CONCAT_PARTS) invalid(`Upload-Concat: a final upload names at most ${MAX_CONCAT_PARTS} partial uploads`);
  const uploadIds = urls.map((url) => {
    let pathname: string;
    try {
      pathname = url.startsWith("/") ? url : new URL(url).pathname;
    } catch {
      invalid(`Upload-Concat: ${shown(url)} is not an upload URL`);
    }
    const id = UPLOAD_PATH.exec(pathname)?.[1];
    if (id === undefined || !UPLOAD_ID.test(id)) invalid(`Upload-Concat: ${shown(url)} is not an upload URL (/v1/uploads/{id})`);
    return id;
  });
  const twice = uploadIds.find((id, i) => uploadIds.indexOf(id) !== i);
  if (twice !== undefined) invalid(`Upload-Concat: partial upload ${twice} is named twice`);
  return { kind: "final", uploadIds };
}

/** Upload-Concat as HEAD reports it: `partial`, or `final;` and the partial uploads' paths. */
export function formatUploadConcat(concat: UploadConcat): string {
  return concat.kind === "partial" ? "partial" : `final;${concat.uploadIds.map((id) => `/v1/uploads/${id}`).join(" ")}`;
}
