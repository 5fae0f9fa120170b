/**
 * The object's bytes of an S3 request body, checked as they stream: aws-chunked decoding with
 * chunk and trailer signatures, the declared SHA-256 of a plain body, the declared length and the
 * declared checksums.
 *
 * Sources (AWS S3 API Reference): "Signature Calculations for the Authorization Header:
 * Transferring Payload in Multiple Chunks (Chunked Upload)" (chunk framing
 * `hex-size;chunk-signature=sig CRLF data CRLF`, the seed signature, the chunk string to sign
 * `AWS4-HMAC-SHA256-PAYLOAD`, x-amz-decoded-content-length), "Signature calculations for trailing
 * headers (chunked uploads)" (the trailer after the 0-size chunk, `x-amz-trailer-signature` over
 * `AWS4-HMAC-SHA256-TRAILER`, `x-amz-trailer`), "Transferring Payload in a Single Chunk"
 * (x-amz-content-sha256 as the payload's hex SHA-256), the S3 User Guide's "Checking object
 * integrity" (x-amz-checksum-crc32 / -crc32c / -sha1 / -sha256: base64 of the big-endian digest)
 * and PutObject's Content-MD5 (RFC 1864).
 *
 * Whoever stores the bytes commits only once the iterator has finished without throwing: so every
 * check — every chunk and trailer signature, the decoded length, the body's end, the SHA-256 and
 * the checksums — runs before the iterator ends, and the last piece of data is held back until
 * they all passed. A signed chunk's bytes are yielded only after its signature was checked.
 */
import { createHash, createHmac, timingSafeEqual, type Hash } from "node:crypto";
import zlib from "node:zlib";
import { crc32c } from "../domain/crc32c.ts";
import { S3Error } from "./errors.ts";
import { type SigV4Claim, STREAMING_SIGNED, STREAMING_SIGNED_TRAILER, STREAMING_UNSIGNED_TRAILER, UNSIGNED_PAYLOAD } from "./sigv4.ts";

/** The largest chunk accepted (a signed chunk is held in memory until its signature is checked). */
export const MAX_CHUNK_BYTES = 16 * 1024 * 1024;
/** The longest chunk-header or trailer line, CRLF excluded; real ones are under 100 bytes. */
export const MAX_LINE_BYTES = 512;

type HeaderSource = { get(name: string): string | null };

const EMPTY = new Uint8Array(0);
const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const SHA256_HEX = /^[0-9a-f]{64}$/;

const incomplete = (detail: string) => new S3Error(400, "IncompleteBody", `The request body terminated unexpectedly: ${detail}.`);
const invalidRequest = (message: string) => new S3Error(400, "InvalidRequest", message);

// ---------------------------------------------------------------------------------------------
// Checksums
// ---------------------------------------------------------------------------------------------

/** A running digest of the decoded bytes, in the form its header carries it (the big-endian digest bytes). */
interface Digest {
  update(bytes: Uint8Array): void;
  digest(): Buffer;
}

const crcDigest = (step: (bytes: Uint8Array, state: number) => number): Digest => {
  let state = 0;
  return {
    update: (bytes) => void (state = step(bytes, state)),
    digest: () => {
      const out = Buffer.alloc(4);
      out.writeUInt32BE(state >>> 0);
      return out;
    },
  };
};
const hashDigest = (algorithm: string): Digest => {
  const hash: Hash = createHash(algorithm);
  return { update: (bytes) => void hash.update(bytes), digest: () => hash.digest() };
};

/** The flexible checksums S3 accepts that this server checks ("Checking object integrity"), by header name. */
const CHECKSUMS: Record<string, { label: string; bytes: number; make: () => Digest }> = {
  "x-amz-checksum-crc32": { label: "CRC32", bytes: 4, make: () => crcDigest((b, s) => zlib.crc32(b, s)) },
  "x-amz-checksum-crc32c": { label: "CRC32C", bytes: 4, make: () => crcDigest((b, s) => crc32c(b, s)) },
  "x-amz-checksum-sha1": { label: "SHA1", bytes: 20, make: () => hashDigest("sha1") },
  "x-amz-checksum-sha256": { label: "SHA256", bytes: 32, make: () => hashDigest("sha256") },
};
/** Flexible checksums S3 defines that are not checked here: refused rather than ignored. */
const UNSUPPORTED_CHECKSUMS = ["x-amz-checksum-crc64nvme"];

/** The digest bytes of a canonical base64 value `expected` long, or undefined. */
function base64Digest(value: string, length: number): Buffer | undefined {
  const bytes = Buffer.from(value, "base64");
  return bytes.length === length && bytes.toString("base64") === value ? bytes : undefined;
}

/** One declared checksum, with what to answer when it is malformed or does not match. */
interface Check {
  digest: Digest;
  /** The declared value, set once known (a trailer's arrives at the end). */
  expected?: Buffer;
  mismatch: () => S3Error;
}

function checksumCheck(name: string, value: string, where: "header" | "trailer"): Check {
  const spec = CHECKSUMS[name]!;
  const expected = base64Digest(value.trim(), spec.bytes);
  if (expected === undefined) throw invalidRequest(`Value for ${name} ${where} is invalid.`);
  return { digest: spec.make(), expected, mismatch: () => new S3Error(400, "BadDigest", `The ${spec.label} you specified did not match the calculated checksum.`) };
}

// ---------------------------------------------------------------------------------------------
// Reading the body
// ---------------------------------------------------------------------------------------------

/**
 * The body as a cursor over the pieces its source yields: lines (CRLF-terminated, bounded) and
 * runs of bytes (subarrays of the pieces, not copies). Counts the bytes received against
 * Content-Length when one was declared.
 */
class BodyReader {
  readonly #it: AsyncIterator<Uint8Array>;
  #piece: Uint8Array = EMPTY;
  #at = 0;
  #ended = false;
  #received = 0;
  readonly #line = new Uint8Array(MAX_LINE_BYTES + 1);

  constructor(
    body: AsyncIterable<Uint8Array>,
    private readonly contentLength: number | undefined,
  ) {
    this.#it = body[Symbol.asyncIterator]();
  }

  /** Whether bytes remain; pulls the next non-empty piece when the current one is used up. */
  async more(): Promise<boolean> {
    while (this.#at >= this.#piece.length) {
      if (this.#ended) return false;
      const next = await this.#it.next();
      if (next.done) {
        this.#ended = true;
        if (this.contentLength !== undefined && this.#received !== this.contentLength) {
          throw incomplete(`${this.#received} of the ${this.contentLength} bytes of Content-Length arrived`);
        }
        return false;
      }
      this.#piece = next.value;
      this.#at = 0;
      this.#received += next.value.length;
      if (this.contentLength !== undefined && this.#received > this.contentLength) {
        throw invalidRequest(`The request body is longer than its Content-Length (${this.contentLength}).`);
      }
    }
    return true;
  }

  /** The rest of the current piece (or the next piece), or undefined at the end of the body. */
  async piece(): Promise<Uint8Array | undefined> {
    if (!(await this.more())) return undefined;
    const out = this.#at === 0 ? this.#piece : this.#piece.subarray(this.#at);
    this.#at = this.#piece.length;
    return out;
  }

  /** `n` bytes as subarrays of the pieces. @throws S3Error IncompleteBody when the body ends first */
  async *take(n: number): AsyncGenerator<Uint8Array> {
    let left = n;
    while (left > 0) {
      if (!(await this.more())) throw incomplete(`a chunk ended ${left} bytes short`);
      const end = Math.min(this.#piece.length, this.#at + left);
      const part = this.#piece.subarray(this.#at, end);
      left -= part.length;
      this.#at = end;
      yield part;
    }
  }

  /**
   * One line without its CRLF, as Latin-1 text.
   * @throws S3Error IncompleteBody at the end of the body, InvalidRequest for a line longer than
   *   MAX_LINE_BYTES or ending in a bare LF
   */
  async line(): Promise<string> {
    let length = 0;
    for (;;) {
      if (!(await this.more())) throw incomplete(length === 0 ? "the aws-chunked body ended before its last chunk" : "a chunk header or trailer line was cut off");
      const lf = this.#piece.indexOf(0x0a, this.#at);
      const end = lf < 0 ? this.#piece.length : lf;
      if (length + (end - this.#at) > MAX_LINE_BYTES + 1) throw invalidRequest(`An aws-chunked header or trailer line is longer than ${MAX_LINE_BYTES} bytes.`);
      this.#line.set(this.#piece.subarray(this.#at, end), length);
      length += end - this.#at;
      this.#at = end;
      if (lf >= 0) {
        this.#at += 1;
        if (length === 0 || this.#line[length - 1] !== 0x0d) throw invalidRequest("An aws-chunked line does not end in CRLF.");
        return Buffer.from(this.#line.buffer, 0, length - 1).toString("latin1");
      }
    }
  }

  /** Consumes the CRLF that ends a chunk's data. */
  async crlf(): Promise<void> {
    const line = await this.line();
    if (line !== "") throw invalidRequest("An aws-chunked chunk is longer than its declared size.");
  }

  /** Stops the source early (after an error or when the reader stops); harmless once it has ended. */
  async close(): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    try {
      await this.#it.return?.();
    } catch {
      // The error that stopped the reading is the one to report.
    }
  }
}

// ---------------------------------------------------------------------------------------------
// What the headers declare
// ---------------------------------------------------------------------------------------------

const decimal = (value: string | null): number | undefined => {
  const text = value?.trim();
  return text !== undefined && /^\d{1,15}$/.test(text) ? Number(text) : undefined;
};

/** The body's checks the request headers declare; validated before a byte is read. */
interface Plan {
  chunked: boolean;
  signedChunks: boolean;
  trailer: "none" | "signed" | "unsigned";
  /** x-amz-decoded-content-length, for an aws-chunked body. */
  decodedLength?: number;
  contentLength?: number;
  sha256?: { hash: Hash; expected: string };
  /** Checksums and Content-MD5 declared in headers. */
  checks: Check[];
  /** The trailer's checksum, named by x-amz-trailer; its value arrives with the trailer. */
  trailerChecksum?: { name: string; check: Check };
}

function planOf(claim: SigV4Claim, headers: HeaderSource): Plan {
  const mode = claim.payloadHash;
  const chunked = mode === STREAMING_SIGNED || mode === STREAMING_SIGNED_TRAILER || mode === STREAMING_UNSIGNED_TRAILER;
  if (!chunked && mode !== UNSIGNED_PAYLOAD && !SHA256_HEX.test(mode)) {
    throw new S3Error(400, "InvalidArgument", `x-amz-content-sha256 "${mode}" is not a payload this server reads.`);
  }
  const plan: Plan = {
    chunked,
    signedChunks: mode === STREAMING_SIGNED || mode === STREAMING_SIGNED_TRAILER,
    trailer: mode === STREAMING_SIGNED_TRAILER ? "signed" : mode === STREAMING_UNSIGNED_TRAILER ? "unsigned" : "none",
    checks: [],
  };
  if (SHA256_HEX.test(mode)) plan.sha256 = { hash: createHash("sha256"), expected: mode };

  // Content-Length counts the bytes on the wire (the aws-chunked encoding included); with
  // Transfer-Encoding the HTTP layer has framed the body and there is none to check.
  const contentLengthHeader = headers.get("content-length");
  if (contentLengthHeader !== null && headers.get("transfer-encoding") === null) {
    const contentLength = decimal(contentLengthHeader);
    if (contentLength === undefined) throw new S3Error(400, "InvalidArgument", "Content-Length is not a number of bytes.");
    plan.contentLength = contentLength;
  }
  if (chunked) {
    const declared = headers.get("x-amz-decoded-content-length");
    if (declared === null) throw new S3Error(411, "MissingContentLength", "You must provide the x-amz-decoded-content-length header with an aws-chunked body.");
    const decodedLength = decimal(declared);
    if (decodedLength === undefined) {
      throw new S3Error(400, "InvalidArgument", "x-amz-decoded-content-length is not a number of bytes.", { ArgumentName: "x-amz-decoded-content-length", ArgumentValue: declared });
    }
    plan.decodedLength = decodedLength;
  }

  let flexible = 0;
  for (const name of UNSUPPORTED_CHECKSUMS) {
    if (headers.get(name) !== null) throw invalidRequest(`${name} is not supported here; use CRC32, CRC32C, SHA1 or SHA256.`);
  }
  for (const name of Object.keys(CHECKSUMS)) {
    const value = headers.get(name);
    if (value === null) continue;
    flexible++;
    plan.checks.push(checksumCheck(name, value, "header"));
  }
  const trailer = headers.get("x-amz-trailer");
  if (trailer !== null) {
    const names = trailer.split(",").map((n) => n.trim().toLowerCase()).filter((n) => n !== "");
    if (plan.trailer === "none") throw invalidRequest("x-amz-trailer needs an x-amz-content-sha256 of STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or STREAMING-UNSIGNED-PAYLOAD-TRAILER.");
    for (const name of names) {
      if (CHECKSUMS[name] === undefined) throw invalidRequest(`The trailing header ${name} is not supported; x-amz-trailer may name x-amz-checksum-crc32, -crc32c, -sha1 or -sha256.`);
    }
    if (names.length > 1) flexible += names.length;
    else if (names.length === 1) {
      const name = names[0]!;
      flexible++;
      plan.trailerChecksum = {
        name,
        check: { digest: CHECKSUMS[name]!.make(), mismatch: () => new S3Error(400, "BadDigest", `The ${CHECKSUMS[name]!.label} you specified did not match the calculated checksum.`) },
      };
    }
  }
  if (flexible > 1) throw invalidRequest("Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.");

  const md5 = headers.get("content-md5");
  if (md5 !== null) {
    const expected = base64Digest(md5.trim(), 16);
    if (expected === undefined) throw new S3Error(400, "InvalidDigest", "The Content-MD5 you specified was invalid.");
    // A body whose SHA-256 the signature covers is the body the client signed: its MD5 adds
    // nothing, and costs ~2.4 s of CPU a GiB here (the AWS CLI sends both on every PUT and part
    // over HTTP). Checked otherwise.
    if (plan.sha256 === undefined) plan.checks.push({ digest: hashDigest("md5"), expected, mismatch: () => new S3Error(400, "BadDigest", "The Content-MD5 you specified did not match what was received.") });
  }
  return plan;
}

// ---------------------------------------------------------------------------------------------
// Signatures of chunks and trailers
// ---------------------------------------------------------------------------------------------

/** HMAC-SHA256 of `stringToSign` with the signing key, hex ("Create a signed AWS API request", step 4). */
const hmacHex = (signingKey: Uint8Array, stringToSign: string): string => createHmac("sha256", signingKey).update(stringToSign, "utf8").digest("hex");

/** Both 64-hex; compared in constant time. */
const sameSignature = (a: string, b: string): boolean => a.length === b.length && timingSafeEqual(Buffer.from(a, "latin1"), Buffer.from(b, "latin1"));

const chunkMismatch = (what: string) =>
  new S3Error(403, "SignatureDoesNotMatch", `The request signature we calculated does not match the signature you provided (${what}). Check your key and signing method.`);

/**
 * A chunk's signature ("Transferring Payload in Multiple Chunks", "Defining the Chunk Body"):
 * HMAC of "AWS4-HMAC-SHA256-PAYLOAD\n<X-Amz-Date>\n<scope>\n<previous signature>\n<SHA-256 of ''>\n<SHA-256 of the chunk's data>",
 * chained from the request's (seed) signature.
 */
export function chunkSignature(signingKey: Uint8Array, claim: SigV4Claim, previousSignature: string, dataSha256Hex: string): string {
  const scope = `${claim.date}/${claim.region}/${claim.service}/aws4_request`;
  return hmacHex(signingKey, ["AWS4-HMAC-SHA256-PAYLOAD", claim.amzDate, scope, previousSignature, EMPTY_SHA256, dataSha256Hex].join("\n"));
}

/**
 * The trailer's signature ("Signature calculations for trailing headers"): HMAC of
 * "AWS4-HMAC-SHA256-TRAILER\n<X-Amz-Date>\n<scope>\n<final chunk's signature>\n<SHA-256 of the trailer>",
 * the trailer being each trailing header but x-amz-trailer-signature as "name:value\n".
 */
export function trailerSignature(signingKey: Uint8Array, claim: SigV4Claim, previousSignature: string, canonicalTrailer: string): string {
  const scope = `${claim.date}/${claim.region}/${claim.service}/aws4_request`;
  const hash = createHash("sha256").update(canonicalTrailer, "latin1").digest("hex");
  return hmacHex(signingKey, ["AWS4-HMAC-SHA256-TRAILER", claim.amzDate, scope, previousSignature, hash].join("\n"));
}

const SIGNED_CHUNK_HEADER = /^([0-9a-fA-F]{1,16});chunk-signature=([0-9a-f]{64})$/;
const UNSIGNED_CHUNK_HEADER = /^([0-9a-fA-F]{1,16})$/;
const TRAILER_LINE = /^([A-Za-z0-9!#$%&'*+.^_`|~-]+):[ \t]*([\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?)?[ \t]*$/;

// ---------------------------------------------------------------------------------------------
// The decoder
// ---------------------------------------------------------------------------------------------

/** Yields the body's checked bytes; returns only after every check passed. */
async function* checkedBytes(body: AsyncIterable<Uint8Array>, claim: SigV4Claim, signingKey: Uint8Array, headers: HeaderSource): AsyncGenerator<Uint8Array> {
  const plan = planOf(claim, headers);
  const reader = new BodyReader(body, plan.contentLength);
  const digests = [...plan.checks.map((c) => c.digest), ...(plan.trailerChecksum ? [plan.trailerChecksum.check.digest] : [])];
  const account = (bytes: Uint8Array) => {
    for (const d of digests) d.update(bytes);
    plan.sha256?.hash.update(bytes);
  };
  try {
    if (!plan.chunked) {
      for (let piece = await reader.piece(); piece !== undefined; piece = await reader.piece()) {
        account(piece);
        yield piece;
      }
    } else {
      yield* chunks(reader, plan, claim, signingKey, account);
    }

    if (plan.sha256) {
      const computed = plan.sha256.hash.digest("hex");
      if (computed !== plan.sha256.expected) {
        throw new S3Error(400, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed.", {
          ClientComputedContentSHA256: plan.sha256.expected,
          S3ComputedContentSHA256: computed,
        });
      }
    }
    for (const check of [...plan.checks, ...(plan.trailerChecksum ? [plan.trailerChecksum.check] : [])]) {
      if (!check.expected || !check.digest.digest().equals(check.expected)) throw check.mismatch();
    }
  } finally {
    await reader.close();
  }
}

/** The aws-chunked part: chunks, the final chunk, the trailer, the end. */
async function* chunks(reader: BodyReader, plan: Plan, claim: SigV4Claim, signingKey: Uint8Array, account: (bytes: Uint8Array) => void): AsyncGenerator<Uint8Array> {
  const decodedLength = plan.decodedLength!;
  let previous = claim.signature;
  let decoded = 0;
  for (;;) {
    const header = await reader.line();
    const match = (plan.signedChunks ? SIGNED_CHUNK_HEADER : UNSIGNED_CHUNK_HEADER).exec(header);
    if (!match) throw invalidRequest(`Malformed aws-chunked chunk header "${header.slice(0, 120)}".`);
    const size = parseInt(match[1]!, 16);
    if (size > MAX_CHUNK_BYTES) throw invalidRequest(`An aws-chunked chunk of ${size} bytes is larger than this server's limit of ${MAX_CHUNK_BYTES}.`);
    if (decoded + size > decodedLength) throw invalidRequest(`The aws-chunked body is longer than its x-amz-decoded-content-length (${decodedLength}).`);

    if (plan.signedChunks) {
      // Held until its signature is checked: at most one chunk, as subarrays of the source's pieces.
      const hash = createHash("sha256");
      const parts: Uint8Array[] = [];
      for await (const part of reader.take(size)) {
        hash.update(part);
        parts.push(part);
      }
      const expected = chunkSignature(signingKey, claim, previous, hash.digest("hex"));
      if (!sameSignature(expected, match[2]!)) throw chunkMismatch(`chunk at decoded byte ${decoded}`);
      previous = match[2]!;
      for (const part of parts) {
        account(part);
        yield part;
      }
    } else {
      for await (const part of reader.take(size)) {
        account(part);
        yield part;
      }
    }
    decoded += size;
    if (size === 0) break;
    await reader.crlf();
  }
  if (decoded !== decodedLength) throw incomplete(`${decoded} of the ${decodedLength} bytes of x-amz-decoded-content-length arrived`);

  if (plan.trailer === "none") {
    await reader.crlf(); // the final chunk's empty data is followed by CRLF
  } else {
    // Trailing header lines, then an empty line (a body that ends right after a complete line is taken as ended too).
    const trailer = new Map<string, string>();
    let signature: string | undefined;
    let canonical = "";
    while (await reader.more()) {
      const line = await reader.line();
      if (line === "") break;
      const field = TRAILER_LINE.exec(line);
      if (!field) throw invalidRequest(`Malformed trailing header "${line.slice(0, 120)}".`);
      const name = field[1]!.toLowerCase();
      const value = field[2] ?? "";
      if (name === "x-amz-trailer-signature") {
        if (plan.trailer !== "signed") throw invalidRequest("x-amz-trailer-signature in the trailer of an unsigned payload.");
        if (signature !== undefined || !/^[0-9a-f]{64}$/.test(value)) throw invalidRequest("Malformed x-amz-trailer-signature.");
        signature = value;
        continue;
      }
      if (name !== plan.trailerChecksum?.name) throw invalidRequest(`The trailing header ${name} was not declared in x-amz-trailer.`);
      if (trailer.has(name)) throw invalidRequest(`The trailing header ${name} is given twice.`);
      trailer.set(name, value);
      canonical += `${name}:${value}\n`;
    }
    if (plan.trailer === "signed") {
      if (signature === undefined) throw invalidRequest("The trailer has no x-amz-trailer-signature.");
      if (!sameSignature(trailerSignature(signingKey, claim, previous, canonical), signature)) throw chunkMismatch("trailer");
    }
    if (plan.trailerChecksum) {
      const value = trailer.get(plan.trailerChecksum.name);
      if (value === undefined) throw invalidRequest(`The trailer does not carry ${plan.trailerChecksum.name}, which x-amz-trailer declared.`);
      const spec = CHECKSUMS[plan.trailerChecksum.name]!;
      const expected = base64Digest(value, spec.bytes);
      if (expected === undefined) throw invalidRequest(`Value for ${plan.trailerChecksum.name} trailing header is invalid.`);
      plan.trailerChecksum.check.expected = expected;
    }
  }
  if (await reader.more()) throw invalidRequest("The request body continues after the end of its aws-chunked encoding.");
}

/**
 * Passes pieces on, the last one only once the source has returned, i.e. passed every check.
 * With the body's declared length, every piece before the one that reaches it goes on at once;
 * without one, each piece waits for the next. (Holding every piece one behind kept a 512 KiB
 * chunk more per body in memory: ten parts at once, 5 MiB, issue 42.)
 * @param total the bytes the body declares (Content-Length, or aws-chunked's decoded length)
 */
async function* holdingLast(source: AsyncGenerator<Uint8Array>, total: number | undefined): AsyncGenerator<Uint8Array> {
  let held: Uint8Array | undefined;
  let passed = 0;
  for await (const piece of source) {
    if (piece.length === 0) continue;
    if (held !== undefined) yield held;
    held = undefined;
    passed += piece.length;
    if (total !== undefined && passed < total) yield piece;
    else held = piece;
  }
  if (held !== undefined) yield held;
}

/** The object's bytes the headers declare, when they do: what {@link holdingLast} holds the end of. */
function declaredTotal(claim: SigV4Claim, headers: HeaderSource): number | undefined {
  const mode = claim.payloadHash;
  if (mode === STREAMING_SIGNED || mode === STREAMING_SIGNED_TRAILER || mode === STREAMING_UNSIGNED_TRAILER) return decimal(headers.get("x-amz-decoded-content-length"));
  return headers.get("transfer-encoding") === null ? decimal(headers.get("content-length")) : undefined;
}

/**
 * The object's bytes of a request body, for a claim {@link verifySigV4} has verified.
 *
 * - `STREAMING-AWS4-HMAC-SHA256-PAYLOAD`: aws-chunked with `;chunk-signature=` on every chunk,
 *   chained from the seed (the claim's) signature with the signing key ("Transferring Payload in
 *   Multiple Chunks"); `…-TRAILER` adds a trailer and its `x-amz-trailer-signature`
 *   ("Signature calculations for trailing headers"); `STREAMING-UNSIGNED-PAYLOAD-TRAILER` has no
 *   signatures, a trailer with the checksum x-amz-trailer names. All need
 *   x-amz-decoded-content-length (411 MissingContentLength) and it must match.
 * - a hex x-amz-content-sha256: the body's SHA-256 must be it (400 XAmzContentSHA256Mismatch).
 * - `UNSIGNED-PAYLOAD`: the body as it is.
 * - in every case x-amz-checksum-crc32 / -crc32c / -sha1 / -sha256 (base64 of the big-endian
 *   digest; one at most, in a header or the trailer) and Content-MD5 (unless a signed SHA-256
 *   covers the body already) are checked against the decoded bytes (400 BadDigest; InvalidRequest / InvalidDigest when malformed), and a
 *   Content-Length (without Transfer-Encoding) against the bytes received (400 IncompleteBody).
 *
 * Every problem throws an S3Error from the iterator, and always before it ends normally: the last
 * piece of data is yielded only after all checks passed, and a signed chunk only after its own
 * signature was checked. Memory: at most one chunk (≤ MAX_CHUNK_BYTES, held as subarrays of the
 * source's pieces, so the source must not reuse a buffer it yielded) plus one piece.
 * @param signingKey the key {@link verifySigV4} returned (unused unless chunks are signed)
 */
export function payloadOf(body: AsyncIterable<Uint8Array>, claim: SigV4Claim, signingKey: Uint8Array, headers: HeaderSource): AsyncIterable<Uint8Array> {
  return holdingLast(checkedBytes(body, claim, signingKey, headers), declaredTotal(claim, headers));
}
