/**
 * S3 addressing onto cubby's tree (CONTRACT §16): a path-style request target `/{bucket}/{key}`
 * names the user's top-level folder `bucket` and, inside it, the folders and the file the key's
 * `/`-separated segments name. Keys are checked as S3 allows them (AWS, "Naming Amazon S3
 * objects": at most 1 024 bytes of UTF-8) and as cubby's names allow them (§12: no control
 * characters, no `.`/`..` segments, no empty segments).
 */
import { MAX_FOLDER_NAME } from "../domain/folder.ts";
import { S3Error } from "./errors.ts";

/** The longest key S3 takes, in bytes of UTF-8. */
export const MAX_KEY_BYTES = 1024;

/** What a path-style target names: the service (no bucket), a bucket, or an object in one. */
export type S3Target = { bucket: undefined; key: undefined } | { bucket: string; key: undefined } | { bucket: string; key: string };

/**
 * The bucket and key of a request path as sent (percent-encoded, path-style addressing).
 * @throws S3Error InvalidURI for a path that does not decode; InvalidBucketName; KeyTooLongError
 */
export function targetOf(rawPath: string): S3Target {
  let path: string;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    throw new S3Error(400, "InvalidURI", "the request path is not valid percent-encoded UTF-8");
  }
  const slash = path.indexOf("/", 1);
  const bucket = slash === -1 ? path.slice(1) : path.slice(1, slash);
  if (bucket === "") return { bucket: undefined, key: undefined };
  checkBucketName(bucket);
  const key = slash === -1 ? "" : path.slice(slash + 1);
  if (key === "") return { bucket, key: undefined };
  return { bucket, key: checkKey(key) };
}

/**
 * A bucket name: a folder name (§12) of at most 63 characters with no upper-case letters or
 * white space, as S3's rules want for the names clients build URLs from.
 * @throws S3Error InvalidBucketName
 */
export function checkBucketName(name: string): string {
  if (name.length > 255 || /[\x00-\x1F\x7F/]/.test(name) || name === "." || name === "..") {
    throw new S3Error(400, "InvalidBucketName", "a bucket is a top-level folder: its name has no '/' or control characters and is not '.' or '..'");
  }
  return name;
}

/**
 * A key as cubby stores it: each `/`-separated segment a name (1–255 characters, no control
 * characters, not `.` or `..`); a key ending in `/` names a folder (a directory marker).
 * @throws S3Error KeyTooLongError past 1 024 bytes; InvalidArgument naming what is wrong
 */
export function checkKey(key: string): string {
  if (Buffer.byteLength(key) > MAX_KEY_BYTES) throw new S3Error(400, "KeyTooLongError", `a key is at most ${MAX_KEY_BYTES} bytes of UTF-8`);
  if (!key.isWellFormed()) throw new S3Error(400, "InvalidArgument", "the key is not valid Unicode");
  if (/[\x00-\x1F\x7F]/.test(key)) throw new S3Error(400, "InvalidArgument", "a key has no control characters (cubby's names do not)");
  const segments = segmentsOf(key);
  for (const s of segments) {
    if (s === "") throw new S3Error(400, "InvalidArgument", "a key has no empty segments ('//' or a leading '/'): each names a folder or the file");
    if (s === "." || s === "..") throw new S3Error(400, "InvalidArgument", "a key has no '.' or '..' segments");
    if (s.length > MAX_FOLDER_NAME) throw new S3Error(400, "InvalidArgument", `a key's segment is at most ${MAX_FOLDER_NAME} characters`);
  }
  return key;
}

/** A key's segments; a directory marker (`a/b/`) has no last, empty one. */
export function segmentsOf(key: string): string[] {
  const segments = key.split("/");
  if (key.endsWith("/")) segments.pop();
  return segments;
}
