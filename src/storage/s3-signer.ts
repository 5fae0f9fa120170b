/**
 * Signed requests to an S3-compatible store for the calls Bun's `S3Client` does not expose: the
 * multipart upload's own steps (CreateMultipartUpload, UploadPart, CompleteMultipartUpload,
 * AbortMultipartUpload, ListMultipartUploads), which s3-object-writer.ts drives to keep several
 * parts in flight. Signature Version 4 in the `Authorization` header with `UNSIGNED-PAYLOAD`
 * (AWS, "Authenticating Requests: Using the Authorization Header (AWS Signature Version 4)"):
 * the body is not hashed, so a part costs no SHA-256 pass over its bytes.
 *
 * An object's URL is the one Bun's client builds for it (`presign`, stripped of its query), so
 * path-style, virtual-hosted style and the default AWS endpoint resolve as in every other call.
 */
import type { S3Client } from "bun";
import { createHash, createHmac } from "node:crypto";

/** What a request is signed with: the bucket's region and credentials (none: anonymous). */
export interface SignerSettings {
  region: string;
  accessKeyId: string | undefined;
  secretAccessKey: string | undefined;
}

/** Query parameters of a request; `""` for a parameter without a value (`?uploads`). */
export type Query = Record<string, string>;

/**
 * RFC 3986 percent-encoding of everything but the unreserved characters, as SigV4 wants it
 * (`encodeURIComponent` leaves `!'()*` alone).
 */
function encodeRfc3986(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

const hmac = (key: Buffer | string, data: string) => createHmac("sha256", key).update(data).digest();

/** Signs and sends requests for objects of one bucket (see the module comment). */
export class S3Signer {
  /** The derived signing key of the day it was made for (`YYYYMMDD`). */
  private signingKey: { day: string; key: Buffer } | undefined;

  constructor(
    private readonly client: S3Client,
    private readonly settings: SignerSettings,
  ) {}

  /**
   * The object's URL as Bun's client addresses it, its path re-encoded the SigV4 way (each
   * segment RFC 3986-encoded, `/` kept) so the path sent is the path signed.
   */
  objectUrl(key: string): URL {
    // Placeholder credentials: only the URL is used, and presign refuses to run without any.
    const url = new URL(this.client.presign(key, { accessKeyId: "x", secretAccessKey: "x", expiresIn: 60 }));
    url.search = "";
    url.pathname = decodeURIComponent(url.pathname).split("/").map(encodeRfc3986).join("/");
    return url;
  }

  /**
   * Sends one signed request for the object at `key`.
   * @param body the request's bytes (sent as they are, not hashed, with their Content-Length),
   *   or none; a `Uint8Array` is read until the request ends, so it must not change before
   * @returns the store's response, whatever its status
   * @throws what `fetch` throws (connection errors)
   */
  async fetch(method: string, key: string, query: Query, body?: Uint8Array | string, signal?: AbortSignal): Promise<Response> {
    const url = this.objectUrl(key);
    const sortedQuery = Object.entries(query)
      .map(([k, v]) => [encodeRfc3986(k), encodeRfc3986(v)] as const)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${k}=${v}`)
      .join("&");
    url.search = sortedQuery;
    const headers: Record<string, string> = {};
    const { accessKeyId, secretAccessKey, region } = this.settings;
    if (accessKeyId !== undefined && secretAccessKey !== undefined) {
      const amzDate = new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
      const day = amzDate.slice(0, 8);
      const scope = `${day}/${region}/s3/aws4_request`;
      const signed = { host: url.host, "x-amz-content-sha256": "UNSIGNED-PAYLOAD", "x-amz-date": amzDate };
      const names = Object.keys(signed).join(";");
      const canonical = [
        method,
        url.pathname,
        sortedQuery,
        ...Object.entries(signed).map(([k, v]) => `${k}:${v}`),
        "",
        names,
        "UNSIGNED-PAYLOAD",
      ].join("\n");
      const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, createHash("sha256").update(canonical).digest("hex")].join("\n");
      const signature = createHmac("sha256", this.keyFor(day, secretAccessKey)).update(toSign).digest("hex");
      headers["x-amz-content-sha256"] = "UNSIGNED-PAYLOAD";
      headers["x-amz-date"] = amzDate;
      headers.authorization = `AWS4-HMAC-SHA256 Credential=${accessKeyId}/${scope}, SignedHeaders=${names}, Signature=${signature}`;
    }
    let sent: string | ReadableStream<Uint8Array> | undefined;
    if (body instanceof Uint8Array) {
      // Handed to fetch as a stream of views with its length: fetch keeps a whole copy of a
      // buffer body (or two) until the request ends, which held ~27 MiB per 8 MiB part in
      // flight; a stream is copied as it is sent (measured: docs/benchmarks.md, issue 28).
      headers["content-length"] = String(body.byteLength);
      sent = viewStream(body);
    } else sent = body;
    return await fetch(url, { method, headers, body: sent, signal, redirect: "manual" });
  }

  private keyFor(day: string, secret: string): Buffer {
    if (this.signingKey?.day !== day) {
      const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, day), this.settings.region), "s3"), "aws4_request");
      this.signingKey = { day, key };
    }
    return this.signingKey.key;
  }
}

/** Bytes sent from a stream per read: views of the body, never copies. */
const PIECE_BYTES = 1024 * 1024;

/** `bytes` as a stream of views of at most {@link PIECE_BYTES}. */
function viewStream(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.byteLength) return controller.close();
      controller.enqueue(bytes.subarray(at, at + PIECE_BYTES));
      at += PIECE_BYTES;
    },
  });
}
