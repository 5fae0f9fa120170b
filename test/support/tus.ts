/**
 * Test support for resumable uploads: tus-js-client (its Node build, the real client) driven
 * to completion or failure, source files of random bytes, and raw tus requests.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { crc32c } from "@node-rs/crc32";
import * as tus from "tus-js-client";
import { checksumToBase64 } from "../../src/domain/checksum.ts";

export const TUS = { "tus-resumable": "1.0.0" };

/** Writes `bytes` random bytes to `dir/name` (1 MiB at a time). @returns its path and CRC32C (base64) */
export function randomFile(dir: string, name: string, bytes: number): { path: string; checksum: string } {
  const file = path.join(dir, name);
  const fd = fs.openSync(file, "w");
  let crc = 0;
  try {
    for (let left = bytes; left > 0; ) {
      const chunk = randomBytes(Math.min(left, 1024 * 1024)); // node:crypto: Node (Playwright) caps getRandomValues at 64 KiB
      fs.writeSync(fd, chunk);
      crc = crc32c(chunk, crc);
      left -= chunk.byteLength;
    }
  } finally {
    fs.closeSync(fd);
  }
  return { path: file, checksum: checksumToBase64(crc) };
}

export interface TusOutcome {
  /** The upload URL (Location). */
  url: string;
  /** Cubby-File-Id of the last response, once finished. */
  fileId: string | null;
  /** Bytes accepted as each chunk finished. */
  accepted: number[];
}

/**
 * Uploads `file` (a path) with tus-js-client and resolves when it succeeds; rejects with the
 * client's error (no retries unless given).
 */
export function tusUpload(
  file: string,
  opts: {
    endpoint?: string;
    uploadUrl?: string;
    token: string;
    chunkSize: number;
    metadata?: Record<string, string>;
    onChunk?: (accepted: number) => void;
    retryDelays?: number[];
    /** Partial uploads side by side (tus concatenation), as the dashboard sends a large file. */
    parallelUploads?: number;
  },
): Promise<TusOutcome> {
  const accepted: number[] = [];
  return new Promise((resolve, reject) => {
    // A stream of a path: tus-js-client reads it as a file, which parallel uploads slice.
    const upload = new tus.Upload(fs.createReadStream(file), {
      endpoint: opts.endpoint,
      uploadUrl: opts.uploadUrl,
      chunkSize: opts.chunkSize,
      parallelUploads: opts.parallelUploads ?? 1,
      headers: { authorization: `Bearer ${opts.token}` },
      metadata: opts.metadata ?? { filename: path.basename(file) },
      retryDelays: opts.retryDelays ?? [],
      storeFingerprintForResuming: false,
      onChunkComplete: (_size, bytesAccepted) => {
        accepted.push(bytesAccepted);
        opts.onChunk?.(bytesAccepted);
      },
      onSuccess: (payload) => resolve({ url: upload.url!, fileId: payload.lastResponse.getHeader("cubby-file-id") ?? null, accepted }),
      onError: (err) => reject(Object.assign(err, { uploadUrl: upload.url, accepted })),
    });
    upload.start();
  });
}

/** A raw tus request: `Tus-Resumable` and the bearer token set, `headers` added. */
export function tusFetch(url: string, method: string, token: string | undefined, headers: Record<string, string> = {}, body?: RequestInit["body"]): Promise<Response> {
  const auth: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` };
  return fetch(url, { method, headers: { ...TUS, ...auth, ...headers }, body });
}

/** Creates an upload of `length` bytes with a raw POST. @returns its URL */
export async function createUpload(base: string, token: string, length: number, metadata = ""): Promise<string> {
  const res = await tusFetch(`${base}/v1/uploads`, "POST", token, { "upload-length": String(length), ...(metadata === "" ? {} : { "upload-metadata": metadata }) });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${await res.text()}`);
  return res.headers.get("location")!;
}

/** PATCHes `body` at `offset`. */
export function patchChunk(url: string, token: string, offset: number, body: Uint8Array | string, headers: Record<string, string> = {}): Promise<Response> {
  return tusFetch(url, "PATCH", token, { "content-type": "application/offset+octet-stream", "upload-offset": String(offset), ...headers }, body);
}

/** HEAD's Upload-Offset, or the status when it is not 200. */
export async function headOffset(url: string, token: string): Promise<number | string> {
  const res = await tusFetch(url, "HEAD", token);
  return res.status === 200 ? Number(res.headers.get("upload-offset")) : `status ${res.status}`;
}
