/**
 * Verifying AWS Signature Version 4 on a request S3 clients send: the `Authorization` header form
 * and the presigned (query-parameter) form.
 *
 * Sources (AWS S3 API Reference): "Authenticating Requests (AWS Signature Version 4)",
 * "Authenticating Requests: Using the Authorization Header", "Signature Calculations for the
 * Authorization Header: Transferring Payload in a Single Chunk", "Authenticating Requests: Using
 * Query Parameters"; (IAM User Guide) "Create a signed AWS API request".
 *
 * Who computes what. The expected signature is aws4fetch's (`AwsV4Signer`, MIT, v1.0.20): it
 * builds the canonical headers from the signed headers we hand it (lower-case names, sorted,
 * values trimmed and inner whitespace runs collapsed), the SignedHeaders line, the credential
 * scope, the canonical request, the string to sign, the signing key (kDate → kRegion → kService →
 * kSigning) and the HMAC. It cannot faithfully compute four parts for a request *received*, so
 * those are ours, handed to it through its public fields (see {@link ReceivedRequestSigner}):
 *  - the canonical URI: aws4fetch reads it from a WHATWG `URL`, which resolves `.`/`..` segments
 *    (S3 keys may contain them; S3 does not normalise), and for S3 it decodes `+` in the path as
 *    a space and `%2F` as a slash before re-encoding, both of which change what the client signed;
 *  - the canonical query: aws4fetch parses with `URLSearchParams` (invalid UTF-8 becomes U+FFFD,
 *    so `%FF` is re-encoded as `%EF%BF%BD`) and, for S3, keeps only the first of repeated names,
 *    where SigV4 sorts all pairs by name, then value;
 *  - the `host` line: aws4fetch takes `URL.host`, which lower-cases and drops a default port;
 *    the client signed the Host header it sent, byte for byte (modulo whitespace);
 *  - the payload hash line: the x-amz-content-sha256 value the client declared (header form) or
 *    UNSIGNED-PAYLOAD (presigned); aws4fetch would read a header or hash a body.
 * The signer always runs in aws4fetch's query mode, only because in header mode it injects
 * `x-amz-date` and `x-amz-content-sha256` into the signed headers, which a client need not sign
 * (S3: "you don't need to include the x-amz-content-sha256 header as a canonical header");
 * in query mode it adds nothing to the headers, and the query it would build is replaced by ours.
 */
import { timingSafeEqual } from "node:crypto";
import { AwsV4Signer } from "aws4fetch";
import { S3Error } from "./errors.ts";

/** The parts of a received request a SigV4 signature covers. */
export interface SignedRequestParts {
  /** "GET", "PUT", … */
  method: string;
  /** The path exactly as received, percent-encoded, no query, e.g. "/bucket/a%20b.txt". */
  rawPath: string;
  /** The query as received without "?", "" if none. */
  rawQuery: string;
  /** Lower-case names; multiple values joined by ", " as received. */
  headers: { get(name: string): string | null };
}

/** What the first, I/O-free step finds: who claims to sign and how. */
export interface SigV4Claim {
  accessKeyId: string;
  /** YYYYMMDD, the credential scope's date (equal to amzDate's date). */
  date: string;
  /** YYYYMMDDTHHMMSSZ, from x-amz-date or X-Amz-Date. */
  amzDate: string;
  region: string;
  service: string;
  /** Lower-case header names, in the order the client listed them. */
  signedHeaders: string[];
  /** 64 lower-case hex digits. */
  signature: string;
  presigned: boolean;
  /** Presigned: X-Amz-Expires (1..604800). */
  expiresSeconds?: number;
  /**
   * x-amz-content-sha256 (header) or UNSIGNED-PAYLOAD (presigned): "UNSIGNED-PAYLOAD",
   * "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
   * "STREAMING-UNSIGNED-PAYLOAD-TRAILER", or a lower-case 64-hex SHA-256.
   */
  payloadHash: string;
}

/** The algorithm of SigV4's Authorization header and X-Amz-Algorithm. */
export const SIGV4_ALGORITHM = "AWS4-HMAC-SHA256";
/** S3's allowed clock skew for a header-signed request, and how far in the future a presigned URL may be dated. */
export const MAX_SKEW_MS = 15 * 60 * 1000;
/** X-Amz-Expires' largest value: seven days ("Authenticating Requests: Using Query Parameters"). */
export const MAX_EXPIRES_SECONDS = 604800;

/**
 * The x-amz-content-sha256 values that are not a hash: no payload signature, aws-chunked with
 * chunk signatures (and a signed trailer), aws-chunked unsigned with a trailer ("Signature
 * Calculations for the Authorization Header: Transferring Payload in Multiple Chunks").
 */
export const UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD";
export const STREAMING_SIGNED = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
export const STREAMING_SIGNED_TRAILER = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER";
export const STREAMING_UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
const PAYLOAD_KEYWORDS = new Set([UNSIGNED_PAYLOAD, STREAMING_SIGNED, STREAMING_SIGNED_TRAILER, STREAMING_UNSIGNED_TRAILER]);
const SHA256_HEX = /^[0-9a-f]{64}$/;
const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;
/** A header name as SignedHeaders lists it: an RFC 9110 token in lower case. */
const SIGNED_HEADER_NAME = /^[a-z0-9!#$%&'*+.^_`|~-]+$/;
/** The presigned form's parameters ("Authenticating Requests: Using Query Parameters"). */
const QUERY_AUTH_PARAMS = ["X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature"] as const;

// ---------------------------------------------------------------------------------------------
// Percent-decoding and SigV4's UriEncode, on bytes
// ---------------------------------------------------------------------------------------------

const hexValue = (byte: number): number =>
  byte >= 0x30 && byte <= 0x39 ? byte - 0x30 : byte >= 0x41 && byte <= 0x46 ? byte - 0x37 : byte >= 0x61 && byte <= 0x66 ? byte - 0x57 : -1;

/**
 * The bytes a URL component stands for: the WHATWG URL Standard's "percent-decode" of the
 * component's UTF-8 bytes (a `%` not followed by two hex digits stays a `%`), with `+` read as a
 * space when `plusIsSpace` (application/x-www-form-urlencoded parsing, as for a query).
 */
function percentDecode(component: string, plusIsSpace: boolean): Uint8Array {
  const input = Buffer.from(component, "utf8");
  const out = new Uint8Array(input.length);
  let n = 0;
  for (let i = 0; i < input.length; i++) {
    const byte = input[i]!;
    if (byte === 0x25 && i + 2 < input.length) {
      const hi = hexValue(input[i + 1]!);
      const lo = hexValue(input[i + 2]!);
      if (hi >= 0 && lo >= 0) {
        out[n++] = (hi << 4) | lo;
        i += 2;
        continue;
      }
    }
    out[n++] = byte === 0x2b && plusIsSpace ? 0x20 : byte;
  }
  return out.subarray(0, n);
}

const HEX = "0123456789ABCDEF";

/**
 * SigV4's UriEncode ("Create a signed AWS API request", canonical request): every byte except the
 * unreserved characters `A-Z a-z 0-9 - _ . ~` as `%XY` with upper-case hex; `/` included (this
 * is applied to one path segment or one query name or value at a time).
 */
function uriEncode(bytes: Uint8Array): string {
  let out = "";
  for (const byte of bytes) {
    const unreserved =
      (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x30 && byte <= 0x39) || byte === 0x2d || byte === 0x5f || byte === 0x2e || byte === 0x7e;
    out += unreserved ? String.fromCharCode(byte) : "%" + HEX[byte >> 4] + HEX[byte & 15];
  }
  return out;
}

const utf8 = new TextDecoder();

/** A query's name/value pairs, percent-decoded as `application/x-www-form-urlencoded` (WHATWG URL Standard §5.1): empty pieces skipped, `+` a space. */
function queryPairs(rawQuery: string): { name: Uint8Array; value: Uint8Array }[] {
  const pairs: { name: Uint8Array; value: Uint8Array }[] = [];
  if (rawQuery === "") return pairs;
  for (const piece of rawQuery.split("&")) {
    if (piece === "") continue;
    const eq = piece.indexOf("=");
    pairs.push({
      name: percentDecode(eq < 0 ? piece : piece.slice(0, eq), true),
      value: percentDecode(eq < 0 ? "" : piece.slice(eq + 1), true),
    });
  }
  return pairs;
}

/**
 * The canonical URI of an S3 request ("Create a signed AWS API request": the URI-encoded absolute
 * path; S3: each segment encoded once, not double-encoded, and not normalised — `//`, `.` and
 * `..` are kept). Each `/`-separated segment of the path as received is percent-decoded and
 * UriEncoded again, so `%2F` inside a segment stays `%2F`, `a+b` becomes `a%2Bb` (a path's `+` is
 * a plus) and `%7e` becomes `~`. An empty path is `/`.
 *
 * The handler must read the path the same way (percent-decode per WHATWG, `+` a plus): then two
 * paths with the same canonical URI name the same key.
 */
export function canonicalUri(rawPath: string): string {
  if (rawPath === "") return "/";
  const path = rawPath.startsWith("/") ? rawPath : "/" + rawPath;
  return path
    .split("/")
    .map((segment) => uriEncode(percentDecode(segment, false)))
    .join("/");
}

/**
 * The canonical query string ("Create a signed AWS API request"): every name and value
 * UriEncoded (an absent value is the empty string, so `?uploads` is `uploads=`), pairs sorted by
 * encoded name, then encoded value, joined with `&`. The query as received is percent-decoded as a
 * form (`+` a space, as S3 and aws4fetch read it) before encoding. For a presigned request
 * X-Amz-Signature is left out ("Authenticating Requests: Using Query Parameters").
 */
export function canonicalQuery(rawQuery: string, presigned: boolean): string {
  const encoded: [string, string][] = [];
  for (const { name, value } of queryPairs(rawQuery)) {
    const encodedName = uriEncode(name);
    if (presigned && encodedName === "X-Amz-Signature") continue;
    encoded.push([encodedName, uriEncode(value)]);
  }
  encoded.sort(([n1, v1], [n2, v2]) => (n1 < n2 ? -1 : n1 > n2 ? 1 : v1 < v2 ? -1 : v1 > v2 ? 1 : 0));
  return encoded.map(([n, v]) => `${n}=${v}`).join("&");
}

// ---------------------------------------------------------------------------------------------
// Parsing the claim
// ---------------------------------------------------------------------------------------------

/**
 * Whether a request carries SigV4 at all: an `Authorization` header starting "AWS4-HMAC-SHA256"
 * ("Authenticating Requests: Using the Authorization Header") or the query parameter
 * `X-Amz-Algorithm=AWS4-HMAC-SHA256` ("Authenticating Requests: Using Query Parameters"). Cheap,
 * for routing; nothing is checked.
 */
export function isSigV4(authorization: string | null, rawQuery: string): boolean {
  if (authorization !== null && authorization.startsWith(SIGV4_ALGORITHM)) return true;
  if (!rawQuery.includes("X-Amz-Algorithm") && !rawQuery.includes("%")) return false;
  for (const { name, value } of queryPairs(rawQuery)) {
    if (utf8.decode(name) === "X-Amz-Algorithm" && utf8.decode(value) === SIGV4_ALGORITHM) return true;
  }
  return false;
}

/** Milliseconds since the epoch of an ISO 8601 basic UTC time `YYYYMMDDTHHMMSSZ`, or undefined when it is not one (or not a real date). */
function amzDateMs(amzDate: string): number | undefined {
  const m = AMZ_DATE.exec(amzDate);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  const ms = Date.UTC(year, month - 1, day, hour, minute, second);
  const d = new Date(ms);
  const real =
    d.getUTCFullYear() === year && d.getUTCMonth() === month - 1 && d.getUTCDate() === day && d.getUTCHours() === hour && d.getUTCMinutes() === minute && d.getUTCSeconds() === second;
  return real ? ms : undefined;
}

/** `YYYYMMDDTHHMMSSZ` of a time, as S3 writes ServerTime and Expires in its errors (ISO 8601). */
const isoTime = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

/** The credential "<AKID>/<YYYYMMDD>/<region>/<service>/aws4_request", checked; `malformed` builds the form's 400. */
function parseCredential(credential: string, amzDate: string, malformed: (message: string) => S3Error) {
  const parts = credential.split("/");
  if (parts.length !== 5 || parts.some((p) => p === "")) {
    throw malformed(`the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".`);
  }
  const [accessKeyId, date, region, service, terminator] = parts as [string, string, string, string, string];
  if (service !== "s3") throw malformed(`incorrect service "${service}". This endpoint belongs to "s3".`);
  if (terminator !== "aws4_request") throw malformed(`incorrect terminal "${terminator}". This endpoint uses "aws4_request".`);
  if (!/^\d{8}$/.test(date) || date !== amzDate.slice(0, 8)) {
    throw malformed(`Invalid credential date "${date}". This date is not the same as X-Amz-Date: "${amzDate.slice(0, 8)}".`);
  }
  return { accessKeyId, date, region, service };
}

/** SignedHeaders "a;b;c": lower-case tokens, no repeats, `host` among them ("Authenticating Requests (AWS Signature Version 4)": the host header must be signed). */
function parseSignedHeaders(list: string, malformed: (message: string) => S3Error): string[] {
  const names = list.split(";");
  if (names.some((n) => !SIGNED_HEADER_NAME.test(n))) throw malformed(`SignedHeaders "${list}" is not a ;-separated list of lower-case header names.`);
  if (new Set(names).size !== names.length) throw malformed(`SignedHeaders "${list}" names a header twice.`);
  if (!names.includes("host")) throw malformed(`'Host' must be a 'SignedHeader' in the AWS Authorization.`);
  return names;
}

/** A signature as sent: 64 hex digits, returned in lower case. */
function parseSignature(signature: string, malformed: (message: string) => S3Error): string {
  if (!/^[0-9a-fA-F]{64}$/.test(signature)) throw malformed(`the Signature is not 64 hexadecimal digits.`);
  return signature.toLowerCase();
}

/**
 * Reads who claims to have signed a request and how, and checks what can be checked without the
 * secret. Rules: "Authenticating Requests: Using the Authorization Header" (the header's three
 * components, the credential scope `<AKID>/<date>/<region>/s3/aws4_request`, x-amz-content-sha256
 * required and one of its allowed values, x-amz-date within 15 minutes of the server's clock:
 * RequestTimeTooSkewed) and "Authenticating Requests: Using Query Parameters" (X-Amz-Algorithm,
 * -Credential, -Date, -Expires (1..604800), -SignedHeaders, -Signature; expired when
 * X-Amz-Date + X-Amz-Expires ≤ now: AccessDenied "Request has expired"; not valid yet when dated
 * more than 15 minutes ahead; the payload is UNSIGNED-PAYLOAD). In both forms `host` must be a
 * signed header and the credential's date must be X-Amz-Date's. Any region is accepted.
 * A request may not carry both forms (S3: InvalidArgument "Only one auth mechanism allowed").
 * @param nowMs the server's clock, ms since the epoch
 * @throws S3Error 400 AuthorizationHeaderMalformed / AuthorizationQueryParametersError /
 *   InvalidRequest / InvalidArgument for a malformed claim, 403 AccessDenied /
 *   RequestTimeTooSkewed for a time outside its window
 */
export function parseSigV4(req: SignedRequestParts, nowMs: number): SigV4Claim {
  const authorization = req.headers.get("authorization");
  const queryAuth = new Map<string, string[]>();
  for (const { name, value } of queryPairs(req.rawQuery)) {
    const key = utf8.decode(name);
    if ((QUERY_AUTH_PARAMS as readonly string[]).includes(key)) queryAuth.set(key, [...(queryAuth.get(key) ?? []), utf8.decode(value)]);
  }
  if (authorization !== null && queryAuth.size > 0) {
    throw new S3Error(
      400,
      "InvalidArgument",
      "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified",
      { ArgumentName: "Authorization", ArgumentValue: authorization },
    );
  }
  return authorization !== null ? parseHeaderClaim(authorization, req, nowMs) : parseQueryClaim(queryAuth, nowMs);
}

function parseHeaderClaim(authorization: string, req: SignedRequestParts, nowMs: number): SigV4Claim {
  const malformed = (message: string) => new S3Error(400, "AuthorizationHeaderMalformed", `The authorization header is malformed; ${message}`);
  if (!authorization.startsWith(SIGV4_ALGORITHM + " ")) {
    throw malformed(`the authorization header must start with "${SIGV4_ALGORITHM} ".`);
  }
  const components = new Map<string, string>();
  for (const part of authorization.slice(SIGV4_ALGORITHM.length + 1).split(",")) {
    const item = part.trim();
    const eq = item.indexOf("=");
    const key = eq < 0 ? item : item.slice(0, eq);
    if (eq < 0 || !["Credential", "SignedHeaders", "Signature"].includes(key) || components.has(key)) {
      throw malformed("the authorization header requires three components: Credential, SignedHeaders, and Signature.");
    }
    components.set(key, item.slice(eq + 1));
  }
  const credential = components.get("Credential");
  const signedHeaderList = components.get("SignedHeaders");
  const signatureText = components.get("Signature");
  if (credential === undefined || signedHeaderList === undefined || signatureText === undefined) {
    throw malformed("the authorization header requires three components: Credential, SignedHeaders, and Signature.");
  }

  const amzDate = req.headers.get("x-amz-date")?.trim();
  if (amzDate === undefined) throw new S3Error(403, "AccessDenied", "AWS authentication requires a valid Date or x-amz-date header");
  const signedMs = amzDateMs(amzDate);
  if (signedMs === undefined) throw new S3Error(403, "AccessDenied", "AWS authentication requires a valid Date or x-amz-date header");

  const scope = parseCredential(credential, amzDate, malformed);
  const signedHeaders = parseSignedHeaders(signedHeaderList, malformed);
  const signature = parseSignature(signatureText, malformed);

  const payloadHash = req.headers.get("x-amz-content-sha256")?.trim();
  if (payloadHash === undefined) throw new S3Error(400, "InvalidRequest", "Missing required header for this request: x-amz-content-sha256");
  if (!PAYLOAD_KEYWORDS.has(payloadHash) && !SHA256_HEX.test(payloadHash)) {
    throw new S3Error(
      400,
      "InvalidArgument",
      "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or a valid (lower-case hex) sha256 value.",
      { ArgumentName: "x-amz-content-sha256", ArgumentValue: payloadHash },
    );
  }

  if (Math.abs(signedMs - nowMs) > MAX_SKEW_MS) {
    throw new S3Error(403, "RequestTimeTooSkewed", "The difference between the request time and the current time is too large.", {
      RequestTime: amzDate,
      ServerTime: isoTime(nowMs),
      MaxAllowedSkewMilliseconds: String(MAX_SKEW_MS),
    });
  }
  return { ...scope, amzDate, signedHeaders, signature, presigned: false, payloadHash };
}

function parseQueryClaim(params: Map<string, string[]>, nowMs: number): SigV4Claim {
  const malformed = (message: string) => new S3Error(400, "AuthorizationQueryParametersError", message);
  const missing = () =>
    malformed("Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.");
  const one = (name: (typeof QUERY_AUTH_PARAMS)[number]): string => {
    const values = params.get(name);
    if (values === undefined) throw missing();
    if (values.length !== 1) throw malformed(`${name} must be given once.`);
    return values[0]!;
  };
  for (const name of QUERY_AUTH_PARAMS) if (!params.has(name)) throw missing();

  const algorithm = one("X-Amz-Algorithm");
  if (algorithm !== SIGV4_ALGORITHM) throw malformed(`X-Amz-Algorithm only supports "${SIGV4_ALGORITHM}"`);
  const amzDate = one("X-Amz-Date");
  const signedMs = amzDateMs(amzDate);
  if (signedMs === undefined) throw malformed(`X-Amz-Date must be in the ISO8601 Long Format "yyyyMMdd'T'HHmmss'Z'"`);
  const expiresText = one("X-Amz-Expires");
  if (!/^\d{1,7}$/.test(expiresText)) throw malformed("X-Amz-Expires should be a number");
  const expiresSeconds = Number(expiresText);
  if (expiresSeconds < 1) throw malformed("X-Amz-Expires must be non-negative (and at least 1 second)");
  if (expiresSeconds > MAX_EXPIRES_SECONDS) {
    throw malformed(`X-Amz-Expires must be less than a week (in seconds) that is; the given X-Amz-Expires must be less than ${MAX_EXPIRES_SECONDS} seconds`);
  }
  const scope = parseCredential(one("X-Amz-Credential"), amzDate, (m) => malformed(`Error parsing the X-Amz-Credential parameter; ${m}`));
  const signedHeaders = parseSignedHeaders(one("X-Amz-SignedHeaders"), malformed);
  const signature = parseSignature(one("X-Amz-Signature"), malformed);

  if (signedMs - nowMs > MAX_SKEW_MS) throw new S3Error(403, "AccessDenied", "Request is not valid yet", { "X-Amz-Date": amzDate, ServerTime: isoTime(nowMs) });
  const expiresMs = signedMs + expiresSeconds * 1000;
  if (expiresMs <= nowMs) {
    throw new S3Error(403, "AccessDenied", "Request has expired", {
      "X-Amz-Expires": expiresText,
      Expires: isoTime(expiresMs),
      ServerTime: isoTime(nowMs),
    });
  }
  return { ...scope, amzDate, signedHeaders, signature, presigned: true, expiresSeconds, payloadHash: UNSIGNED_PAYLOAD };
}

// ---------------------------------------------------------------------------------------------
// Verifying the signature
// ---------------------------------------------------------------------------------------------

type SignerInit = ConstructorParameters<typeof AwsV4Signer>[0];

/** A header value as SigV4 canonicalises it: trimmed, runs of whitespace one space (the same rule aws4fetch applies to the other headers). */
const canonicalValue = (value: string): string => value.trim().replace(/\s+/g, " ");

/**
 * aws4fetch's signer for a request as received: the parts it cannot take from a request it
 * received faithfully (see the module comment) are set on its public fields after it has built the
 * rest; `hexBodyHash` returns the declared payload hash. Everything else — canonical headers but
 * host, SignedHeaders, scope, canonical request, string to sign, key derivation, HMAC — is its own.
 */
class ReceivedRequestSigner extends AwsV4Signer {
  readonly #payloadHash: string;

  constructor(init: SignerInit, received: { canonicalUri: string; canonicalQuery: string; host: string; payloadHash: string }) {
    super(init);
    this.encodedPath = received.canonicalUri;
    this.encodedSearch = received.canonicalQuery;
    this.canonicalHeaders = this.canonicalHeaders
      .split("\n")
      .map((line) => (line.startsWith("host:") ? `host:${canonicalValue(received.host)}` : line))
      .join("\n");
    this.#payloadHash = received.payloadHash;
  }

  override async hexBodyHash(): Promise<string> {
    return this.#payloadHash;
  }
}

/** A placeholder origin for aws4fetch's required URL: path, query and host line are replaced. */
const PLACEHOLDER_URL = "https://s3.invalid/";

/**
 * Checks a claim's signature with the access key's secret: the canonical request
 * ("Create a signed AWS API request": method, canonical URI, canonical query, canonical headers of
 * the signed headers, SignedHeaders, payload hash), the string to sign
 * (AWS4-HMAC-SHA256, X-Amz-Date, scope, hash of the canonical request), the signing key and the
 * HMAC are computed by aws4fetch from the request's parts (see the module comment for the parts
 * that are ours), and the result is compared with the claim's in constant time.
 * A signed header missing from the request counts as empty (and so fails unless it was signed empty).
 * @returns the signing key (kSigning), for the chunk and trailer signatures of an aws-chunked body
 * @throws S3Error 403 SignatureDoesNotMatch (with StringToSign and CanonicalRequest, as S3 gives them)
 */
export async function verifySigV4(req: SignedRequestParts, claim: SigV4Claim, secretAccessKey: string): Promise<{ signingKey: Uint8Array }> {
  const mismatch = (details: Record<string, string> = {}) =>
    new S3Error(403, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your key and signing method.", {
      AWSAccessKeyId: claim.accessKeyId,
      ...details,
      SignatureProvided: claim.signature,
    });

  const headers = new Headers();
  try {
    for (const name of claim.signedHeaders) if (name !== "host") headers.set(name, req.headers.get(name) ?? "");
  } catch {
    throw mismatch(); // a value Headers refuses (no client signs one)
  }
  const cache = new Map<string, ArrayBuffer>();
  const signer = new ReceivedRequestSigner(
    {
      method: req.method,
      url: PLACEHOLDER_URL,
      headers,
      accessKeyId: claim.accessKeyId,
      secretAccessKey,
      service: claim.service,
      region: claim.region,
      datetime: claim.amzDate,
      signQuery: true,
      allHeaders: true,
      cache,
    },
    {
      canonicalUri: canonicalUri(req.rawPath),
      canonicalQuery: canonicalQuery(req.rawQuery, claim.presigned),
      // HTTP/2 carries the authority in :authority (RFC 9113 §8.3.1), a Host header being optional.
      host: req.headers.get("host") ?? req.headers.get(":authority") ?? "",
      payloadHash: claim.payloadHash,
    },
  );
  // aws4fetch sorts the names itself; a list the client did not sort (or that differs in any other
  // way) is not the SignedHeaders line the client signed, so it cannot match.
  const listed = claim.signedHeaders.join(";");
  const expected = await signer.signature();
  const signingKey = cache.values().next().value;
  if (!(signingKey instanceof ArrayBuffer)) throw new Error("aws4fetch did not cache the signing key (has its AwsV4Signer changed?)");

  const same = signer.signedHeaders === listed && timingSafeEqual(Buffer.from(expected, "latin1"), Buffer.from(claim.signature, "latin1"));
  if (!same) {
    throw mismatch({ StringToSign: await signer.stringToSign(), CanonicalRequest: await signer.canonicalString() });
  }
  return { signingKey: new Uint8Array(signingKey) };
}
