/**
 * Writing one object to an S3-compatible store as a stream, the way both S3 writers need it
 * (s3-blobs.ts for blobs, s3-partials.ts for resumable uploads' chunks): a multipart upload with
 * several parts in flight at once, in a fixed set of reused part buffers, so what a write holds
 * is bounded (`(partsInFlight + 1) × partBytes`) whatever the object's size; and the object
 * completed only after the caller's last check, so a write that fails is never visible.
 *
 * Bun's own `S3File.writer()` was measured for this (docs/benchmarks.md, issue 28): its `write()`
 * returns no promise, so a `flush()` is its only backpressure; with `queueSize: 4`, 8 MiB parts
 * and a flush every 4 parts (each waiting for the slowest), a 256 MiB upload peaked at 140 MiB
 * over the measuring process's idle RSS. So the parts are sent here, through {@link S3Signer}.
 */
import type { S3Client } from "bun";
import { collectGarbage, GcPacer, releaseChunk } from "../gc-pacer.ts";
import type { S3Signer } from "./s3-signer.ts";

/** How {@link writeObject} writes: its part size and the caller's checks. */
export interface ObjectWrite {
  /** Multipart part size, bytes (S3: at least 5 MiB but for the last part). */
  partBytes: number;
  /** Sees every chunk before it is written (size limits, checksums); throwing aborts the write. */
  onChunk(chunk: Uint8Array): void;
  /** Runs after the last chunk, before the object is completed; throwing aborts the write. */
  beforeEnd?(size: number): void;
  /** Whether a body of no bytes makes no object (a tus chunk) rather than an empty one (a blob). */
  emptyIsNothing?: boolean;
}

/** The bucket as the writer reaches it: Bun's client for whole-object calls, the signer for parts. */
export interface ObjectStore {
  client: S3Client;
  signer: S3Signer;
  /** Parts sent at once (each holds one part buffer until the store has answered). */
  partsInFlight: number;
}

/**
 * Full collections paced by the bytes S3 uploads take in, one per 8 MiB: the connection's chunks
 * are garbage once copied into a part, and only a collection frees them. Counted on the
 * process's shared pacer (64 MiB), a 1 GiB upload with 4 parts in flight peaked at 116–120 MiB
 * over idle; every 16 MiB, 71; every 8 MiB, 55. The price is CPU: ~3 s a GiB (5.8–6.5 s of the
 * server's CPU against 2.6–3.4 s collecting nothing). Parts written on a socket of their own
 * instead of through `fetch` peaked the same at every pacing, so it is the chunks, not fetch's
 * buffers, that the collections free (docs/benchmarks.md, issue 28).
 */
const uploadPacer = new GcPacer(8 * 1024 * 1024);

/** Bytes of the first part's buffer before it grows (doubling, up to the part size). */
const FIRST_BUFFER_BYTES = 64 * 1024;

/** Attempts per request before a write fails: connection errors, 5xx and 429 are tried again. */
const ATTEMPTS = 3;

/**
 * Streams `content` into the object at `key` and completes it, then checks the stored size
 * with a HEAD. A body that fits in one part is one PUT; a longer one a multipart upload with up
 * to `store.partsInFlight` parts sent at once while the next part fills (reading from `content`
 * waits while all are in flight: the client's upload is slowed to the store's pace).
 * @returns the bytes written (0 and no object for an empty body with `emptyIsNothing`)
 * @throws what `onChunk` / `beforeEnd` throw, or the store's error; the multipart upload is then
 *   aborted (AbortMultipartUpload, once every part in flight has settled) and any completed
 *   object deleted
 */
export async function writeObject(store: ObjectStore, key: string, content: AsyncIterable<Uint8Array> | null, opts: ObjectWrite): Promise<number> {
  const { signer } = store;
  const free: Uint8Array[] = [];
  /** Part buffers made so far; the first part's (see below) is one. */
  let allocated = 1;
  const waiting: ((buffer: Uint8Array) => void)[] = [];
  /** A part buffer: a free one, a new one while fewer than partsInFlight + 1 exist, else the next released. */
  const take = (): Promise<Uint8Array> | Uint8Array => {
    const buffer = free.pop();
    if (buffer !== undefined) return buffer;
    if (allocated <= store.partsInFlight) {
      allocated++;
      return new Uint8Array(opts.partBytes);
    }
    return new Promise((resolve) => waiting.push(resolve));
  };
  const release = (buffer: Uint8Array) => {
    const next = waiting.shift();
    if (next !== undefined) next(buffer);
    else free.push(buffer);
  };

  let uploadId: string | undefined;
  const etags: string[] = [];
  const inFlight = new Set<Promise<void>>();
  let failure: unknown;
  const sendPart = (partNumber: number, buffer: Uint8Array, length: number) => {
    const sent = (async () => {
      try {
        const res = await request(signer, "PUT", key, { partNumber: String(partNumber), uploadId: uploadId! }, buffer.subarray(0, length));
        const etag = res.headers.get("etag");
        await res.arrayBuffer(); // read to its end, so the connection goes back to the pool
        if (etag === null) throw new Error(`S3 UploadPart ${partNumber} of ${key}: no ETag in the answer`);
        etags[partNumber - 1] = etag;
      } catch (err) {
        failure ??= err;
      } finally {
        release(buffer);
      }
    })();
    inFlight.add(sent);
    void sent.then(() => inFlight.delete(sent));
  };
  const settle = async () => {
    while (inFlight.size > 0) await Promise.all(inFlight);
  };

  let size = 0;
  // The first part grows from a small buffer as bytes arrive (most bodies are one small PUT).
  let part: Uint8Array = new Uint8Array(Math.min(opts.partBytes, FIRST_BUFFER_BYTES));
  let filled = 0;
  let parts = 0;
  try {
    if (content !== null) {
      for await (const chunk of content) {
        opts.onChunk(chunk);
        size += chunk.byteLength;
        let at = 0;
        while (at < chunk.byteLength) {
          const n = Math.min(chunk.byteLength - at, opts.partBytes - filled);
          if (filled + n > part.byteLength) {
            const bigger = new Uint8Array(Math.min(opts.partBytes, Math.max(2 * part.byteLength, filled + n)));
            bigger.set(part.subarray(0, filled));
            uploadPacer.add(part.byteLength);
            part = bigger;
          }
          part.set(chunk.subarray(at, at + n), filled);
          filled += n;
          at += n;
          if (filled === opts.partBytes) {
            uploadId ??= await createUpload(signer, key);
            sendPart(++parts, part, filled);
            part = await take();
            filled = 0;
          }
          if (failure !== undefined) throw failure;
        }
        // Copied into the part: freed now (its memory would otherwise wait for a collection).
        releaseChunk(chunk, uploadPacer);
      }
    }
    opts.beforeEnd?.(size);
    if (uploadId === undefined) {
      if (size === 0 && opts.emptyIsNothing) return 0;
      await (await request(signer, "PUT", key, {}, part.subarray(0, filled))).arrayBuffer();
    } else {
      if (filled > 0) sendPart(++parts, part, filled);
      await settle();
      if (failure !== undefined) throw failure;
      await completeUpload(signer, key, uploadId, etags);
    }
    const stored = await store.client.file(key).stat();
    if (stored.size !== size) throw new Error(`S3 object ${key} holds ${stored.size} bytes, ${size} were sent`);
    return size;
  } catch (err) {
    await settle();
    if (uploadId !== undefined) await request(signer, "DELETE", key, { uploadId }).then((res) => res.arrayBuffer()).catch(() => {});
    await store.client.file(key).delete().catch(() => {});
    throw err;
  } finally {
    if (uploadId !== undefined) {
      // The part buffers and the parts' requests are garbage now: collected at once, they do not
      // add to whatever the process does next (a download after a 1 GiB upload peaked 71–81 MiB
      // over idle with them left to the next collection, 33–40 before parts went in parallel).
      free.length = 0;
      part = new Uint8Array(0);
      collectGarbage();
    }
  }
}

/**
 * One request, tried up to {@link ATTEMPTS} times on connection errors, 5xx and 429 (every body
 * here is in memory, so it can be sent again).
 * @returns the successful (2xx) response
 * @throws an Error naming the call, the key, the status and the store's message
 */
async function request(signer: S3Signer, method: string, key: string, query: Record<string, string>, body?: Uint8Array | string): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    let res: Response;
    try {
      res = await signer.fetch(method, key, query, body);
    } catch (err) {
      if (attempt < ATTEMPTS) continue;
      throw new Error(`S3 ${method} ${key}: ${(err as Error).message}`, { cause: err });
    }
    if (res.ok) return res;
    const text = await res.text().catch(() => "");
    if ((res.status >= 500 || res.status === 429) && attempt < ATTEMPTS) continue;
    throw new Error(`S3 ${method} ${key}${Object.keys(query).length > 0 ? `?${Object.keys(query).join("&")}` : ""}: HTTP ${res.status} ${text.slice(0, 500)}`);
  }
}

/** CreateMultipartUpload. @returns the upload ID */
async function createUpload(signer: S3Signer, key: string): Promise<string> {
  const xml = await (await request(signer, "POST", key, { uploads: "" })).text();
  const id = /<UploadId>([^<]+)<\/UploadId>/.exec(xml)?.[1];
  if (id === undefined) throw new Error(`S3 CreateMultipartUpload of ${key}: no UploadId in ${xml.slice(0, 300)}`);
  return unescapeXml(id);
}

/**
 * CompleteMultipartUpload with every part's ETag. S3 may answer 200 and an `<Error>` in the body
 * (an error after the response began), which is an error here.
 */
async function completeUpload(signer: S3Signer, key: string, uploadId: string, etags: readonly string[]): Promise<void> {
  const parts = etags.map((etag, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${escapeXml(etag)}</ETag></Part>`).join("");
  const res = await request(signer, "POST", key, { uploadId }, `<CompleteMultipartUpload>${parts}</CompleteMultipartUpload>`);
  const xml = await res.text();
  if (xml.includes("<Error>")) throw new Error(`S3 CompleteMultipartUpload of ${key}: ${xml.slice(0, 500)}`);
}

const escapeXml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const unescapeXml = (s: string) => s.replace(/&quot;/g, '"').replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
