/**
 * The digest of one tus chunk as it streams past, for the checksum extension: CRC32C (4 bytes
 * big-endian, as the File checksum) or SHA-1 (tus requires `sha1`).
 */
import { crc32cUpdate } from "../domain/checksum.ts";
import type { UploadChecksum } from "../domain/tus.ts";
import { AppError } from "../errors.ts";

/** Computes the digest `expected` names over every `update`, and checks it with {@link verify}. */
export class ChunkDigest {
  private crc = 0;
  private readonly sha1: Bun.CryptoHasher | undefined;

  constructor(private readonly expected: UploadChecksum) {
    this.sha1 = expected.algorithm === "sha1" ? new Bun.CryptoHasher("sha1") : undefined;
  }

  update(bytes: Uint8Array): void {
    if (this.sha1 !== undefined) this.sha1.update(bytes);
    else this.crc = crc32cUpdate(this.crc, bytes);
  }

  /** @throws AppError checksum_mismatch (tus 460) when the chunk's digest differs */
  verify(): void {
    let actual: Uint8Array;
    if (this.sha1 !== undefined) actual = this.sha1.digest() as Uint8Array;
    else {
      actual = Buffer.alloc(4);
      (actual as Buffer).writeUInt32BE(this.crc >>> 0);
    }
    if (!Buffer.from(actual).equals(Buffer.from(this.expected.digest))) {
      throw new AppError(
        "checksum_mismatch",
        `checksum mismatch: Upload-Checksum says ${this.expected.algorithm} ${Buffer.from(this.expected.digest).toString("base64")}, the chunk has ${Buffer.from(actual).toString("base64")}; the chunk was discarded`,
      );
    }
  }
}

/** A digest for `checksum`, or undefined when none was declared. */
export function chunkDigest(checksum: UploadChecksum | undefined): ChunkDigest | undefined {
  return checksum === undefined ? undefined : new ChunkDigest(checksum);
}
