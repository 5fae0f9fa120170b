/**
 * CRC32C (Castagnoli, RFC 3720 §B.4) checksums in the form Google Cloud Storage and S3 use:
 * the 4-byte big-endian value, base64-encoded (`"123456789"` → `4waSgw==`).
 */
import { AppError } from "../errors.ts";
import { crc32c } from "./crc32c.ts";

export { crc32cCombine } from "./crc32c.ts";

/**
 * Continues a CRC32C over `bytes`, starting from `state` (0 for a fresh checksum).
 * @returns the unsigned 32-bit CRC32C (see ./crc32c.ts: WebAssembly, nothing loaded from disk)
 */
export function crc32cUpdate(state: number, bytes: Uint8Array): number {
  return crc32c(bytes, state);
}

/** Base64 of the 4-byte big-endian CRC32C value. */
export function checksumToBase64(crc: number): string {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(crc >>> 0);
  return b.toString("base64");
}

/** CRC32C of a whole buffer or string (UTF-8), base64-encoded. */
export function checksumOf(data: Uint8Array | string): string {
  return checksumToBase64(crc32c(typeof data === "string" ? Buffer.from(data) : data, 0));
}

const B64_CRC = /^[A-Za-z0-9+/]{6}==$/;

/**
 * The CRC32C a client declared for an upload, from `x-goog-hash: crc32c=<b64>` (other hashes in
 * that header, like `md5=`, are ignored) or `x-amz-checksum-crc32c: <b64>`.
 * @returns the base64 value, or undefined when neither header is present
 * @throws AppError invalid_argument when a value is malformed or the two headers disagree
 */
export function parseDeclaredChecksum(headers: {
  get(name: string): string | null;
}): string | undefined {
  const values: string[] = [];
  const goog = headers.get("x-goog-hash");
  if (goog !== null) {
    for (const part of goog.split(",")) {
      const eq = part.indexOf("=");
      if (eq < 0) continue;
      if (part.slice(0, eq).trim().toLowerCase() !== "crc32c") continue;
      values.push(part.slice(eq + 1).trim());
    }
  }
  const amz = headers.get("x-amz-checksum-crc32c");
  if (amz !== null) values.push(amz.trim());
  if (values.length === 0) return undefined;
  for (const v of values) {
    if (!B64_CRC.test(v)) {
      throw new AppError("invalid_argument", `checksum header: "${v}" is not a base64 CRC32C (8 characters ending in ==)`);
    }
  }
  if (values.some((v) => v !== values[0])) {
    throw new AppError("invalid_argument", "checksum headers disagree");
  }
  return values[0];
}
