/**
 * SigV4 verification (src/s3/sigv4.ts) and aws-chunked bodies (src/s3/chunked.ts), against
 * signatures real clients made: botocore (the boto3 client's own requests, captured before they
 * are sent, and its SigV4Auth / S3SigV4QueryAuth signers on hand-made AWSRequests), the AWS CLI's
 * `aws s3 presign`, and the worked examples of AWS's documentation ("Transferring Payload in
 * Multiple Chunks" and "Signature calculations for trailing headers": 65 KiB of 'a' in chunks of
 * 64 KiB, 1 KiB and 0, credentials AKIAIOSFODNN7EXAMPLE, 20130524T000000Z).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { payloadOf } from "../../src/s3/chunked.ts";
import { S3Error, s3ErrorXml } from "../../src/s3/errors.ts";
import { canonicalQuery, canonicalUri, isSigV4, parseSigV4, type SignedRequestParts, type SigV4Claim, verifySigV4 } from "../../src/s3/sigv4.ts";

const ACCESS_KEY = "AKIDEXAMPLE";
const SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
/** The fixed signing time, near now (whole seconds); checks run at NOW. */
const SIGNED_AT = Math.floor(Date.now() / 1000) - 60;
const NOW = SIGNED_AT * 1000 + 5_000;
const MINUTE = 60_000;

// ---------------------------------------------------------------------------------------------
// Running the real clients
// ---------------------------------------------------------------------------------------------

/** Runs a program with `input` on stdin; its stdout. Killed after 90 s. */
async function run(argv: string[], input = "", env?: Record<string, string>): Promise<string> {
  const proc = Bun.spawn(argv, { stdin: "pipe", stdout: "pipe", stderr: "pipe", env: env ?? process.env });
  const timer = setTimeout(() => proc.kill(), 90_000);
  try {
    proc.stdin.write(input);
    await proc.stdin.end();
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    if (code !== 0) throw new Error(`${argv[0]} exited with ${code}: ${err}`);
    return out;
  } finally {
    clearTimeout(timer);
    if (proc.exitCode === null) {
      proc.kill();
      await proc.exited;
    }
  }
}

interface Captured {
  method: string;
  url: string;
  headers: Record<string, string>;
  /** hex */
  body: string;
}

/**
 * botocore signing requests at a fixed time: boto3 client calls (captured in `before-send`, so
 * nothing is sent; serializer, checksums and signer all botocore's own) and botocore's signers on
 * hand-made AWSRequests (URLs already encoded as botocore's serializer would).
 */
const BOTOCORE = `
import json, sys, datetime
from unittest import mock
import boto3, botocore.auth
from botocore.awsrequest import AWSRequest
from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth
from botocore.config import Config
from botocore.credentials import Credentials
inp = json.load(sys.stdin)
fixed = datetime.datetime.fromtimestamp(inp["time"], datetime.timezone.utc).replace(tzinfo=None)
out = {}
class Captured(Exception): pass
def record(method, url, headers, body):
    if hasattr(body, "read"): body = body.read()
    if isinstance(body, str): body = body.encode()
    hs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in headers.items()}
    return {"method": method, "url": url, "headers": hs, "body": (body or b"").hex()}
def client(endpoint):
    c = boto3.client("s3", endpoint_url=endpoint, region_name=inp["region"], aws_access_key_id=inp["ak"], aws_secret_access_key=inp["sk"],
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    def capture(request, **kw): raise Captured(record(request.method, request.url, request.headers, request.body))
    c.meta.events.register("before-send.s3", capture)
    return c
creds = Credentials(inp["ak"], inp["sk"])
def low(name, method, url, headers=None, body=b"", presign=None):
    r = AWSRequest(method=method, url=url, headers=headers or {}, data=body)
    if presign: S3SigV4QueryAuth(creds, "s3", inp["region"], expires=presign).add_auth(r)
    else: S3SigV4Auth(creds, "s3", inp["region"]).add_auth(r)
    out[name] = record(r.method, r.url, r.headers, body)
with mock.patch("botocore.auth.get_current_datetime", return_value=fixed):
    http = client("http://127.0.0.1:9")
    https = client("https://127.0.0.1:9")
    calls = {
        "get": lambda: http.get_object(Bucket="bkt", Key="dir/a b+c~d/\\u2713 \\u00e9!(x)*.txt"),
        "getRange": lambda: http.get_object(Bucket="bkt", Key="plain.txt", Range="bytes=0-9"),
        "put": lambda: http.put_object(Bucket="bkt", Key="put.txt", Body=b"hello world"),
        "putTrailer": lambda: https.put_object(Bucket="bkt", Key="p", Body=b"x" * 100000),
        "putTrailerSha256": lambda: https.put_object(Bucket="bkt", Key="p", Body=b"y" * 3000, ChecksumAlgorithm="SHA256"),
        "list": lambda: http.list_objects_v2(Bucket="bkt", Prefix="a/b", Delimiter="/"),
        "uploads": lambda: http.create_multipart_upload(Bucket="bkt", Key="big bin"),
    }
    for name, call in calls.items():
        try:
            call()
            raise SystemExit(name + " was sent")
        except Captured as e:
            out[name] = e.args[0]
    out["presigned"] = {"method": "GET", "url": http.generate_presigned_url("get_object", Params={"Bucket": "bkt", "Key": "dir/a b+c~d/\\u2713.txt"}, ExpiresIn=300), "headers": {}, "body": ""}
    low("lowQuery", "GET", "http://127.0.0.1:9/bkt?versions&prefix=&key-marker=a%2Fb&max-keys=5&z=2&z=1")
    low("lowPath", "GET", "http://127.0.0.1:9/bkt/a/../b/./c//d%2Fe%2Bf~g%20h")
    low("lowPut", "PUT", "http://127.0.0.1:9/bkt/k", {"Content-Type": "text/plain", "x-amz-meta-note": "  two   spaces\\there  "}, b"data")
    low("lowPresign", "GET", "http://127.0.0.1:9/bkt/k%20x?response-content-type=text%2Fplain&versionId=3", presign=900)
print(json.dumps(out))
`;

/**
 * An independent signer of aws-chunked bodies, after AWS's documentation (chunk and trailer
 * strings to sign), for bodies the documentation's examples do not cover. Every signature is
 * right; `trailer` values are written as given (a wrong checksum stays wrong but signed).
 */
const CHUNK_SIGNER = `
import json, sys, hmac, hashlib, base64, zlib
inp = json.load(sys.stdin)
def h(k, m): return hmac.new(k, m.encode(), hashlib.sha256).digest()
key = h(h(h(h(("AWS4" + inp["secret"]).encode(), inp["date"]), inp["region"]), "s3"), "aws4_request")
scope = "%s/%s/s3/aws4_request" % (inp["date"], inp["region"])
E = hashlib.sha256(b"").hexdigest()
def sign(parts): return hmac.new(key, "\\n".join(parts).encode(), hashlib.sha256).hexdigest()
def body(data, sizes, trailer):
    out, prev, at = b"", inp["seed"], 0
    for n in sizes + [0]:
        chunk = data[at:at + n]; at += n
        prev = sign(["AWS4-HMAC-SHA256-PAYLOAD", inp["amzDate"], scope, prev, E, hashlib.sha256(chunk).hexdigest()])
        out += b"%x;chunk-signature=%s\\r\\n" % (n, prev.encode()) + chunk
        if n or trailer is None: out += b"\\r\\n"
    if trailer is not None:
        canonical = "".join("%s:%s\\n" % (k, v) for k, v in trailer)
        sig = sign(["AWS4-HMAC-SHA256-TRAILER", inp["amzDate"], scope, prev, hashlib.sha256(canonical.encode()).hexdigest()])
        out += "".join("%s:%s\\r\\n" % (k, v) for k, v in trailer).encode() + b"x-amz-trailer-signature:" + sig.encode() + b"\\r\\n\\r\\n"
    return out.hex()
data = bytes(range(256)) * 40 + b"tail"
b64 = lambda b: base64.b64encode(b).decode()
crc32 = b64(zlib.crc32(data).to_bytes(4, "big"))
print(json.dumps({
    "key": key.hex(),
    "data": data.hex(),
    "plain": body(data, [4096, 4096, 2052], None),
    "crc32": crc32,
    "trailerCrc32": body(data, [8192, 2052], [("x-amz-checksum-crc32", crc32)]),
    "trailerSha1": body(data, [10244], [("x-amz-checksum-sha1", b64(hashlib.sha1(data).digest()))]),
    "trailerWrongSha256": body(data, [5000, 5244], [("x-amz-checksum-sha256", b64(hashlib.sha256(b"not the data").digest()))]),
}))
`;

let bc: Record<string, Captured>;
let signer: Record<string, string>;
let cliPresigned: string;

beforeAll(async () => {
  const [botocore, chunks, cli] = await Promise.all([
    run(["python3", "-c", BOTOCORE], JSON.stringify({ time: SIGNED_AT, region: "us-east-1", ak: ACCESS_KEY, sk: SECRET })),
    run(["python3", "-c", CHUNK_SIGNER], JSON.stringify({ secret: DOC.secret, date: "20130524", amzDate: DOC.amzDate, region: "us-east-1", seed: DOC_SEED })),
    (async () => {
      const dir = await mkdtemp(join(tmpdir(), "s3-sigv4-"));
      const config = `${dir}/config`;
      // Without signature_version = s3v4 the CLI presigns a custom endpoint with SigV2.
      await Bun.write(config, "[default]\nregion = us-east-1\ns3 =\n    signature_version = s3v4\n");
      try {
        return await run(["aws", "s3", "presign", "s3://bkt/dir/a b+c.txt", "--endpoint-url", "http://127.0.0.1:9", "--expires-in", "60"], "", {
          PATH: process.env.PATH ?? "",
          HOME: dir,
          AWS_ACCESS_KEY_ID: ACCESS_KEY,
          AWS_SECRET_ACCESS_KEY: SECRET,
          AWS_CONFIG_FILE: config,
          AWS_SHARED_CREDENTIALS_FILE: `${dir}/none`,
          AWS_EC2_METADATA_DISABLED: "true",
        });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    })(),
  ]);
  bc = JSON.parse(botocore);
  signer = JSON.parse(chunks);
  cliPresigned = cli.trim();
}, 120_000);

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

type Received = SignedRequestParts & { headerMap: Map<string, string>; body: Buffer };

/** A URL split as it arrives (no URL parsing: it would normalise), headers in lower case, plus the Host the HTTP client sends. */
function received(method: string, url: string, headers: Record<string, string> = {}, body: Buffer = Buffer.alloc(0)): Received {
  const m = /^https?:\/\/([^/?#]+)([^?#]*)(?:\?([^#]*))?$/.exec(url);
  if (!m) throw new Error(`not a URL: ${url}`);
  const headerMap = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  if (!headerMap.has("host")) headerMap.set("host", m[1]!);
  return { method, rawPath: m[2] || "/", rawQuery: m[3] ?? "", headers: { get: (n) => headerMap.get(n) ?? null }, headerMap, body };
}
const fromBotocore = (c: Captured): Received => received(c.method, c.url, c.headers, Buffer.from(c.body, "hex"));
const captured = (name: string): Received => fromBotocore(bc[name]!);

/** The request with one header changed (undefined: removed). */
function withHeader(req: Received, name: string, value: string | undefined): Received {
  const headerMap = new Map(req.headerMap);
  if (value === undefined) headerMap.delete(name);
  else headerMap.set(name, value);
  return { ...req, headerMap, headers: { get: (n) => headerMap.get(n) ?? null } };
}

/** "status Code" of the S3Error a call throws; anything else thrown propagates; "ok" when nothing is. */
async function failure(call: () => unknown): Promise<string> {
  try {
    await call();
    return "ok";
  } catch (e) {
    if (e instanceof S3Error) return `${e.status} ${e.code}`;
    throw e;
  }
}

/** Parses and verifies as the handler will. */
async function verify(req: SignedRequestParts, nowMs = NOW, secret = SECRET) {
  const claim = parseSigV4(req, nowMs);
  const { signingKey } = await verifySigV4(req, claim, secret);
  return { claim, signingKey };
}

/** A body as an HTTP server hands it over: pieces of `size` bytes. */
async function* inPieces(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

/** What a caller storing the payload sees: the bytes yielded before the end, and the S3Error if any. */
async function consume(payload: AsyncIterable<Uint8Array>): Promise<{ bytes: Buffer; error?: string; message?: string }> {
  const parts: Uint8Array[] = [];
  try {
    for await (const part of payload) parts.push(Uint8Array.from(part));
    return { bytes: Buffer.concat(parts) };
  } catch (e) {
    if (!(e instanceof S3Error)) throw e;
    return { bytes: Buffer.concat(parts), error: `${e.status} ${e.code}`, message: e.message };
  }
}

const flipByte = (s: string, at: number): string => s.slice(0, at) + (s[at] === "a" ? "b" : "a") + s.slice(at + 1);
const flipHex = (hex: string): string => (hex[0] === "0" ? "1" : "0") + hex.slice(1);

// ---------------------------------------------------------------------------------------------
// SigV4: what real clients sign verifies
// ---------------------------------------------------------------------------------------------

describe("SigV4 signatures made by botocore and the AWS CLI verify", () => {
  test.each([
    ["a GET of a key with spaces, unicode, +, ~, ! ( ) *", "get"],
    ["a GET with a signed Range header", "getRange"],
    ["a PUT with the payload's SHA-256 and an x-amz-checksum-crc32 header", "put"],
    ["a PUT streamed as STREAMING-UNSIGNED-PAYLOAD-TRAILER (CRC32 trailer)", "putTrailer"],
    ["a ListObjectsV2 (list-type=2&prefix=a%2Fb&delimiter=%2F&encoding-type=url)", "list"],
    ["a CreateMultipartUpload (?uploads, an empty value)", "uploads"],
    ["a query with empty values and a repeated name, unsorted (SigV4Auth)", "lowQuery"],
    ["a path with . and .. segments, //, %2F, %2B and ~, not normalised (SigV4Auth)", "lowPath"],
    ["a header value with runs of spaces and a tab (SigV4Auth)", "lowPut"],
    ["a presigned GET (generate_presigned_url)", "presigned"],
    ["a presigned GET with query parameters (S3SigV4QueryAuth)", "lowPresign"],
  ])("%s", async (_, name) => {
    const req = captured(name);
    expect(isSigV4(req.headers.get("authorization"), req.rawQuery)).toBe(true);
    const { claim, signingKey } = await verify(req);
    expect(claim.accessKeyId).toBe(ACCESS_KEY);
    expect(claim.region).toBe("us-east-1");
    expect(claim.signedHeaders).toContain("host");
    expect(signingKey.length).toBe(32);
  });

  test("what the claims say", () => {
    const put = parseSigV4(captured("put"), NOW);
    expect(put).toMatchObject({ presigned: false, payloadHash: "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9", service: "s3" });
    expect(put.amzDate.slice(0, 8)).toBe(put.date);
    expect(parseSigV4(captured("putTrailer"), NOW).payloadHash).toBe("STREAMING-UNSIGNED-PAYLOAD-TRAILER");
    expect(parseSigV4(captured("presigned"), NOW)).toMatchObject({ presigned: true, expiresSeconds: 300, payloadHash: "UNSIGNED-PAYLOAD", signedHeaders: ["host"] });
  });

  test("any region in the scope is accepted", async () => {
    const out = await run(["python3", "-c", BOTOCORE], JSON.stringify({ time: SIGNED_AT, region: "eu-central-1", ak: ACCESS_KEY, sk: SECRET }));
    const { claim } = await verify(fromBotocore(JSON.parse(out).get));
    expect(claim.region).toBe("eu-central-1");
  }, 60_000);

  test("a URL from `aws s3 presign` (signed now, 60 s)", async () => {
    expect(cliPresigned).toContain("X-Amz-Algorithm=AWS4-HMAC-SHA256");
    const req = received("GET", cliPresigned);
    const { claim } = await verify(req, Date.now());
    expect(claim).toMatchObject({ presigned: true, expiresSeconds: 60 });
    expect(await failure(() => verify(req, Date.now() + 61_000))).toBe("403 AccessDenied");
  });

  test("the AWS documentation's seed signatures (chunked PUT, and with a trailer)", async () => {
    const at = Date.UTC(2013, 4, 24);
    await verify(docRequest(), at, DOC.secret);
    await verify(docTrailerRequest(), at, DOC.secret);
  });
});

// ---------------------------------------------------------------------------------------------
// SigV4: what must fail
// ---------------------------------------------------------------------------------------------

describe("a changed byte fails with SignatureDoesNotMatch", () => {
  const mismatch = "403 SignatureDoesNotMatch";

  test("in the path", async () => {
    const req = captured("get");
    expect(await failure(() => verify({ ...req, rawPath: req.rawPath.replace("a%20b", "a%20c") }))).toBe(mismatch);
    expect(await failure(() => verify({ ...req, rawPath: req.rawPath + "/" }))).toBe(mismatch);
    // Not normalised: a/../b is not b.
    const dots = captured("lowPath");
    expect(await failure(() => verify({ ...dots, rawPath: "/bkt/b/c//d%2Fe%2Bf~g%20h" }))).toBe(mismatch);
    // %2F is not a / (in a segment), and + is a plus, not a space.
    expect(await failure(() => verify({ ...dots, rawPath: dots.rawPath.replace("%2F", "/") }))).toBe(mismatch);
    expect(await failure(() => verify({ ...dots, rawPath: dots.rawPath.replace("%20", "+") }))).toBe(mismatch);
  });

  test("in the query", async () => {
    const list = captured("list");
    expect(await failure(() => verify({ ...list, rawQuery: list.rawQuery.replace("prefix=a%2Fb", "prefix=a%2Fc") }))).toBe(mismatch);
    expect(await failure(() => verify({ ...list, rawQuery: list.rawQuery + "&max-keys=1" }))).toBe(mismatch);
    const uploads = captured("uploads");
    expect(await failure(() => verify({ ...uploads, rawQuery: "" }))).toBe(mismatch);
    const query = captured("lowQuery");
    expect(await failure(() => verify({ ...query, rawQuery: query.rawQuery.replace("&z=1", "") }))).toBe(mismatch);
    const presigned = captured("presigned");
    expect(await failure(() => verify({ ...presigned, rawQuery: presigned.rawQuery.replace("X-Amz-Expires=300", "X-Amz-Expires=301") }))).toBe(mismatch);
    expect(await failure(() => verify({ ...presigned, rawQuery: presigned.rawQuery + "&versionId=1" }))).toBe(mismatch);
  });

  test("in a signed header, or the method", async () => {
    const range = captured("getRange");
    expect(await failure(() => verify(withHeader(range, "range", "bytes=0-99")))).toBe(mismatch);
    expect(await failure(() => verify(withHeader(range, "range", undefined)))).toBe(mismatch);
    expect(await failure(() => verify(withHeader(range, "host", "127.0.0.1:8")))).toBe(mismatch);
    const put = captured("put");
    expect(await failure(() => verify(withHeader(put, "x-amz-content-sha256", flipHex(put.headerMap.get("x-amz-content-sha256")!))))).toBe(mismatch);
    expect(await failure(() => verify(withHeader(put, "x-amz-content-sha256", "UNSIGNED-PAYLOAD")))).toBe(mismatch);
    expect(await failure(() => verify(withHeader(put, "x-amz-checksum-crc32", "AAAAAA==")))).toBe(mismatch);
    expect(await failure(() => verify({ ...put, method: "POST" }))).toBe(mismatch);
    const presigned = captured("presigned");
    expect(await failure(() => verify(withHeader(presigned, "host", "localhost:9")))).toBe(mismatch);
  });

  test("an unsigned header may change; whitespace in a signed one is canonical", async () => {
    await verify(withHeader(captured("put"), "user-agent", "something else"));
    const req = captured("lowPut");
    await verify(withHeader(req, "x-amz-meta-note", "two spaces here"));
    expect(await failure(() => verify(withHeader(req, "x-amz-meta-note", "two spaceshere")))).toBe(mismatch);
  });

  test("in the secret, the signature, the access key or the date", async () => {
    for (const name of ["get", "presigned"]) {
      const req = captured(name);
      expect(await failure(() => verify(req, NOW, SECRET.replace("w", "W")))).toBe(mismatch);
      const auth = req.headerMap.get("authorization");
      if (auth !== undefined) {
        const sig = auth.slice(-64);
        expect(await failure(() => verify(withHeader(req, "authorization", auth.slice(0, -64) + flipHex(sig))))).toBe(mismatch);
        // The header form does not sign the access key ID (only the scope): it selects the secret.
        const otherKey = withHeader(req, "authorization", auth.replace("Credential=AKIDEXAMPLE", "Credential=AKIDEXAMPLF"));
        expect((await verify(otherKey)).claim.accessKeyId).toBe("AKIDEXAMPLF");
        expect(await failure(() => verify(withHeader(req, "authorization", auth.replace("/us-east-1/", "/us-east-2/"))))).toBe(mismatch);
        const date = req.headerMap.get("x-amz-date")!;
        const later = date.slice(0, -3) + String((Number(date.slice(-3, -1)) + 1) % 60).padStart(2, "0") + "Z";
        expect(await failure(() => verify(withHeader(req, "x-amz-date", later)))).toBe(mismatch);
      } else {
        const sig = /X-Amz-Signature=([0-9a-f]{64})/.exec(req.rawQuery)![1]!;
        expect(await failure(() => verify({ ...req, rawQuery: req.rawQuery.replace(sig, flipHex(sig)) }))).toBe(mismatch);
        // The presigned form signs its X-Amz-Credential, access key ID included.
        expect(await failure(() => verify({ ...req, rawQuery: req.rawQuery.replace("AKIDEXAMPLE", "AKIDEXAMPLF") }))).toBe(mismatch);
      }
    }
  });

  test("the error carries what S3 gives: StringToSign and CanonicalRequest", async () => {
    const req = captured("list");
    try {
      await verify(req, NOW, "wrong");
      throw new Error("verified");
    } catch (e) {
      if (!(e instanceof S3Error)) throw e;
      expect(e.extra?.StringToSign?.split("\n")[0]).toBe("AWS4-HMAC-SHA256");
      expect(e.extra?.CanonicalRequest).toContain("\n/bkt\ndelimiter=%2F&encoding-type=url&list-type=2&prefix=a%2Fb\nhost:127.0.0.1:9\n");
      expect(e.extra?.AWSAccessKeyId).toBe(ACCESS_KEY);
    }
  });
});

describe("time", () => {
  test("a header-signed request more than 15 minutes off the server's clock: RequestTimeTooSkewed", async () => {
    const req = captured("get");
    const signed = SIGNED_AT * 1000;
    expect(await failure(() => verify(req, signed + 15 * MINUTE))).toBe("ok");
    expect(await failure(() => verify(req, signed - 15 * MINUTE))).toBe("ok");
    expect(await failure(() => verify(req, signed + 15 * MINUTE + 1000))).toBe("403 RequestTimeTooSkewed");
    expect(await failure(() => verify(req, signed - 15 * MINUTE - 1000))).toBe("403 RequestTimeTooSkewed");
    try {
      parseSigV4(req, signed + 20 * MINUTE);
    } catch (e) {
      expect((e as S3Error).extra).toMatchObject({ MaxAllowedSkewMilliseconds: "900000", RequestTime: req.headerMap.get("x-amz-date") });
    }
  });

  test("a presigned URL: valid until X-Amz-Date + X-Amz-Expires, and not more than 15 minutes ahead", async () => {
    const req = captured("presigned"); // expires in 300 s
    const signed = SIGNED_AT * 1000;
    expect(await failure(() => verify(req, signed + 299_000))).toBe("ok");
    expect(await failure(() => verify(req, signed + 300_000))).toBe("403 AccessDenied");
    expect(await failure(() => verify(req, signed + 7 * 86400_000))).toBe("403 AccessDenied");
    try {
      parseSigV4(req, signed + 300_000);
    } catch (e) {
      expect((e as S3Error).message).toBe("Request has expired");
    }
    expect(await failure(() => verify(req, signed - 15 * MINUTE))).toBe("ok");
    expect(await failure(() => verify(req, signed - 16 * MINUTE))).toBe("403 AccessDenied");
  });
});

describe("malformed claims fail with 400s", () => {
  const auth = () => captured("get").headerMap.get("authorization")!;
  const withAuth = (value: string) => withHeader(captured("get"), "authorization", value);

  test.each([
    ["no SignedHeaders", (a: string) => a.replace(/SignedHeaders=[^,]*, /, ""), "400 AuthorizationHeaderMalformed"],
    ["an unknown component", (a: string) => a + ", Extra=1", "400 AuthorizationHeaderMalformed"],
    ["a component twice", (a: string) => a + ", Signature=" + "0".repeat(64), "400 AuthorizationHeaderMalformed"],
    ["a credential of four parts", (a: string) => a.replace("/us-east-1/s3/", "/s3/"), "400 AuthorizationHeaderMalformed"],
    ["another service", (a: string) => a.replace("/s3/", "/ec2/"), "400 AuthorizationHeaderMalformed"],
    ["another terminator", (a: string) => a.replace("aws4_request", "aws5_request"), "400 AuthorizationHeaderMalformed"],
    ["a credential date that is not X-Amz-Date's", (a: string) => a.replace(/\/(\d{8})\//, "/19990101/"), "400 AuthorizationHeaderMalformed"],
    ["host not signed", (a: string) => a.replace("SignedHeaders=host;", "SignedHeaders="), "400 AuthorizationHeaderMalformed"],
    ["an upper-case signed header", (a: string) => a.replace("SignedHeaders=host;", "SignedHeaders=Host;"), "400 AuthorizationHeaderMalformed"],
    ["a short signature", (a: string) => a.slice(0, -1), "400 AuthorizationHeaderMalformed"],
    ["a signature that is not hex", (a: string) => a.slice(0, -1) + "g", "400 AuthorizationHeaderMalformed"],
    ["no space after the algorithm", (a: string) => a.replace("AWS4-HMAC-SHA256 ", "AWS4-HMAC-SHA256,"), "400 AuthorizationHeaderMalformed"],
  ])("Authorization with %s", async (_, change, want) => {
    expect(await failure(() => verify(withAuth(change(auth()))))).toBe(want);
  });

  test("headers", async () => {
    const req = captured("get");
    expect(await failure(() => verify(withHeader(req, "x-amz-content-sha256", undefined)))).toBe("400 InvalidRequest");
    expect(await failure(() => verify(withHeader(req, "x-amz-content-sha256", "abc")))).toBe("400 InvalidArgument");
    expect(await failure(() => verify(withHeader(req, "x-amz-content-sha256", "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD")))).toBe("400 InvalidArgument");
    expect(await failure(() => verify(withHeader(req, "x-amz-date", undefined)))).toBe("403 AccessDenied");
    expect(await failure(() => verify(withHeader(req, "x-amz-date", "20260230T000000Z")))).toBe("403 AccessDenied");
    // Both mechanisms at once.
    const both = { ...req, rawQuery: "X-Amz-Algorithm=AWS4-HMAC-SHA256" };
    expect(await failure(() => verify(both))).toBe("400 InvalidArgument");
  });

  test.each([
    ["without X-Amz-Signature", (q: string) => q.replace(/&X-Amz-Signature=[0-9a-f]+/, "")],
    ["without X-Amz-Expires", (q: string) => q.replace(/&X-Amz-Expires=\d+/, "")],
    ["with X-Amz-Expires=0", (q: string) => q.replace(/X-Amz-Expires=\d+/, "X-Amz-Expires=0")],
    ["with X-Amz-Expires=604801", (q: string) => q.replace(/X-Amz-Expires=\d+/, "X-Amz-Expires=604801")],
    ["with X-Amz-Expires=-5", (q: string) => q.replace(/X-Amz-Expires=\d+/, "X-Amz-Expires=-5")],
    ["with another algorithm", (q: string) => q.replace("X-Amz-Algorithm=AWS4-HMAC-SHA256", "X-Amz-Algorithm=AWS4-HMAC-SHA512")],
    ["with X-Amz-Date twice", (q: string) => q + "&X-Amz-Date=20200101T000000Z"],
    ["with a bad X-Amz-Date", (q: string) => q.replace(/X-Amz-Date=\d{8}T/, "X-Amz-Date=2026-01-01T")],
    ["with a credential for another service", (q: string) => q.replace("%2Fs3%2F", "%2Fsqs%2F")],
    ["without host in X-Amz-SignedHeaders", (q: string) => q.replace("X-Amz-SignedHeaders=host", "X-Amz-SignedHeaders=range")],
  ])("a presigned URL %s: AuthorizationQueryParametersError", async (_, change) => {
    const req = captured("presigned");
    expect(await failure(() => verify({ ...req, rawQuery: change(req.rawQuery) }))).toBe("400 AuthorizationQueryParametersError");
  });

  test("a presigned URL with X-Amz-Expires=604800 is accepted", () => {
    const req = captured("presigned");
    expect(parseSigV4({ ...req, rawQuery: req.rawQuery.replace(/X-Amz-Expires=\d+/, "X-Amz-Expires=604800") }, NOW).expiresSeconds).toBe(604800);
  });
});

describe("isSigV4, canonical URI and query", () => {
  test("isSigV4", () => {
    expect(isSigV4("AWS4-HMAC-SHA256 Credential=…", "")).toBe(true);
    expect(isSigV4(null, "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=x")).toBe(true);
    expect(isSigV4(null, "a=1&X%2DAmz%2DAlgorithm=AWS4%2DHMAC%2DSHA256")).toBe(true);
    expect(isSigV4("AWS AKID:sig", "")).toBe(false);
    expect(isSigV4("Bearer x", "uploads")).toBe(false);
    expect(isSigV4(null, "X-Amz-Algorithm=AWS4-ECDSA-P256-SHA256")).toBe(false);
    expect(isSigV4(null, "")).toBe(false);
  });

  test.each([
    ["", "/"],
    ["/", "/"],
    ["/bkt/a%20b.txt", "/bkt/a%20b.txt"],
    ["/bkt/a b", "/bkt/a%20b"],
    ["/bkt/a+b", "/bkt/a%2Bb"],
    ["/bkt/%7e%2f%2B!*'()", "/bkt/~%2F%2B%21%2A%27%28%29"],
    ["/bkt/a/../b/./c//", "/bkt/a/../b/./c//"],
    ["/bkt/\u2713", "/bkt/%E2%9C%93"],
    ["/bkt/%FF%zz%", "/bkt/%FF%25zz%25"],
  ])("canonicalUri(%p) = %p", (raw, want) => expect(canonicalUri(raw)).toBe(want));

  test.each([
    ["", false, ""],
    ["uploads", false, "uploads="],
    ["list-type=2&prefix=a%2Fb&delimiter=%2F", false, "delimiter=%2F&list-type=2&prefix=a%2Fb"],
    ["b=2&a=&a=1&a=0&c", false, "a=&a=0&a=1&b=2&c="],
    ["prefix=a+b&k=a%2Bb&x=%7e", false, "k=a%2Bb&prefix=a%20b&x=~"],
    ["a=1&&b=2&", false, "a=1&b=2"],
    ["X-Amz-Signature=abc&X-Amz-Date=1", true, "X-Amz-Date=1"],
    ["X-Amz-Signature=abc&X-Amz-Date=1", false, "X-Amz-Date=1&X-Amz-Signature=abc"],
  ])("canonicalQuery(%p, presigned %p) = %p", (raw, presigned, want) => expect(canonicalQuery(raw, presigned)).toBe(want));
});

// ---------------------------------------------------------------------------------------------
// aws-chunked bodies
// ---------------------------------------------------------------------------------------------

/** AWS's worked examples: "Transferring Payload in Multiple Chunks" and "Signature calculations for trailing headers". */
const DOC = {
  secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
  amzDate: "20130524T000000Z",
  object: Buffer.alloc(66560, "a"),
} as const;
const DOC_SEED = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
const DOC_CHUNK_SIGNATURES = [
  "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
  "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
  "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
];
const DOC_TRAILER_SEED = "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e";
const DOC_TRAILER_CHUNK_SIGNATURES = [
  "b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
  "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
  "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992",
];
const DOC_TRAILER = "x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n\r\n";

function docRequest(): Received {
  return received("PUT", "http://s3.amazonaws.com/examplebucket/chunkObject.txt", {
    "x-amz-date": DOC.amzDate,
    "x-amz-storage-class": "REDUCED_REDUNDANCY",
    authorization: `AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature=${DOC_SEED}`,
    "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
    "content-encoding": "aws-chunked",
    "x-amz-decoded-content-length": "66560",
    "content-length": "66824",
  });
}
function docTrailerRequest(): Received {
  return received("PUT", "http://s3.amazonaws.com/examplebucket/chunkObject.txt", {
    "x-amz-date": DOC.amzDate,
    "x-amz-storage-class": "REDUCED_REDUNDANCY",
    authorization: `AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class;x-amz-trailer,Signature=${DOC_TRAILER_SEED}`,
    "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
    "content-encoding": "aws-chunked",
    "x-amz-decoded-content-length": "66560",
    "x-amz-trailer": "x-amz-checksum-crc32c",
  });
}
/** The example's body: chunks of 65536, 1024 and 0 bytes of 'a' with the given signatures, then `end`. */
function docBody(signatures: string[], end: string, object: Uint8Array = DOC.object): Buffer {
  return Buffer.concat([
    Buffer.from(`10000;chunk-signature=${signatures[0]}\r\n`),
    object.subarray(0, 65536),
    Buffer.from(`\r\n400;chunk-signature=${signatures[1]}\r\n`),
    object.subarray(65536),
    Buffer.from(`\r\n0;chunk-signature=${signatures[2]}\r\n${end}`),
  ]);
}
const DOC_AT = Date.UTC(2013, 4, 24);

/** The documentation's request verified, and its payload of `body` in pieces of `pieceSize`. */
async function docPayload(req: Received, body: Uint8Array, pieceSize = 4096) {
  const { claim, signingKey } = await verify(req, DOC_AT, DOC.secret);
  return consume(payloadOf(inPieces(body, pieceSize), claim, signingKey, req.headers));
}

describe("aws-chunked: the AWS documentation's examples", () => {
  test.each([1, 7, 4096, 65536, 70000])("signed chunks decode to the object, pieces of %i bytes", async (pieceSize) => {
    const body = docBody(DOC_CHUNK_SIGNATURES, "\r\n");
    expect(body.length).toBe(66824); // the example's Content-Length
    const out = await docPayload(docRequest(), body, pieceSize);
    expect(out.error).toBeUndefined();
    expect(out.bytes.equals(DOC.object)).toBe(true);
  });

  test("signed chunks with a signed trailer (CRC32C) decode to the object", async () => {
    const out = await docPayload(docTrailerRequest(), docBody(DOC_TRAILER_CHUNK_SIGNATURES, DOC_TRAILER), 1000);
    expect(out.error).toBeUndefined();
    expect(out.bytes.equals(DOC.object)).toBe(true);
  });

  test("a changed data byte: SignatureDoesNotMatch, and the changed chunk is never yielded", async () => {
    const second = Buffer.from(DOC.object);
    second[65536 + 10] = 0x62;
    const out = await docPayload(docRequest(), docBody(DOC_CHUNK_SIGNATURES, "\r\n", second));
    expect(out.error).toBe("403 SignatureDoesNotMatch");
    // The first chunk, whose signature holds, and nothing of the changed one.
    expect(out.bytes.length).toBe(65536);
    const first = Buffer.from(DOC.object);
    first[3] = 0x62;
    const early = await docPayload(docRequest(), docBody(DOC_CHUNK_SIGNATURES, "\r\n", first));
    expect(early).toMatchObject({ error: "403 SignatureDoesNotMatch", bytes: Buffer.alloc(0) });
  });

  test("a wrong signature on any chunk, the final one included: nothing is accepted", async () => {
    for (let i = 0; i < 3; i++) {
      const signatures = [...DOC_CHUNK_SIGNATURES];
      signatures[i] = flipHex(signatures[i]!);
      const out = await docPayload(docRequest(), docBody(signatures, "\r\n"));
      expect(out.error).toBe("403 SignatureDoesNotMatch");
      expect(out.bytes.length).toBeLessThan(DOC.object.length);
    }
    // Chunks reordered: the chain breaks.
    const swapped = Buffer.concat([Buffer.from(`400;chunk-signature=${DOC_CHUNK_SIGNATURES[1]}\r\n`), DOC.object.subarray(0, 1024), Buffer.from("\r\n")]);
    expect((await docPayload(docRequest(), swapped)).error).toBe("403 SignatureDoesNotMatch");
  });

  test("the trailer: a wrong signature, a changed checksum, or none at all", async () => {
    const wrongSignature = DOC_TRAILER.replace("d81f82fc", "d81f82fd");
    expect((await docPayload(docTrailerRequest(), docBody(DOC_TRAILER_CHUNK_SIGNATURES, wrongSignature))).error).toBe("403 SignatureDoesNotMatch");
    const changedChecksum = DOC_TRAILER.replace("sOO8/Q==", "sOO8/A==");
    const out = await docPayload(docTrailerRequest(), docBody(DOC_TRAILER_CHUNK_SIGNATURES, changedChecksum));
    expect(out.error).toBe("403 SignatureDoesNotMatch");
    expect(out.bytes.length).toBeLessThan(DOC.object.length);
    const unsignedTrailer = "x-amz-checksum-crc32c:sOO8/Q==\r\n\r\n";
    expect((await docPayload(docTrailerRequest(), docBody(DOC_TRAILER_CHUNK_SIGNATURES, unsignedTrailer))).error).toBe("400 InvalidRequest");
    const noTrailer = "x-amz-trailer-signature:d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n\r\n";
    expect((await docPayload(docTrailerRequest(), docBody(DOC_TRAILER_CHUNK_SIGNATURES, noTrailer))).error).not.toBeUndefined();
  });

  test("a body cut anywhere fails, and never yields the whole object", async () => {
    const body = docBody(DOC_CHUNK_SIGNATURES, "\r\n");
    for (const cut of [0, 1, 50, 88, 89, 90, 1000, 65625, 65626, 65627, 65700, 66700, 66740, 66820, 66822, 66823]) {
      const out = await docPayload(docRequest(), body.subarray(0, cut));
      expect(out.error).toMatch(/^400 (IncompleteBody|InvalidRequest)$/);
      expect(out.bytes.length).toBeLessThan(DOC.object.length);
    }
    const trailerBody = docBody(DOC_TRAILER_CHUNK_SIGNATURES, DOC_TRAILER);
    for (const cut of [trailerBody.length - DOC_TRAILER.length, trailerBody.length - DOC_TRAILER.length + 20, trailerBody.length - 40]) {
      const out = await docPayload(docTrailerRequest(), trailerBody.subarray(0, cut));
      expect(out.error).toMatch(/^400 (IncompleteBody|InvalidRequest)$/);
      expect(out.bytes.length).toBeLessThan(DOC.object.length);
    }
  });

  test("x-amz-decoded-content-length that is not the object's length, or missing", async () => {
    const body = docBody(DOC_CHUNK_SIGNATURES, "\r\n");
    // Signed headers: the claim and key come from the real request, the length header is what payloadOf reads.
    const { claim, signingKey } = await verify(docRequest(), DOC_AT, DOC.secret);
    const withLength = (value: string | undefined) => withHeader(docRequest(), "x-amz-decoded-content-length", value).headers;
    const longer = await consume(payloadOf(inPieces(body, 4096), claim, signingKey, withLength("66561")));
    expect(longer.error).toBe("400 IncompleteBody");
    // What came, never the declared length: no consumer takes the object for whole.
    expect(longer.bytes.length).toBeLessThan(66561);
    const shorter = await consume(payloadOf(inPieces(body, 4096), claim, signingKey, withLength("66559")));
    expect(shorter.error).toBe("400 InvalidRequest");
    expect((await consume(payloadOf(inPieces(body, 4096), claim, signingKey, withLength(undefined)))).error).toBe("411 MissingContentLength");
    expect((await consume(payloadOf(inPieces(body, 4096), claim, signingKey, withLength("6e4")))).error).toBe("400 InvalidArgument");
  });

  test("malformed framing: InvalidRequest", async () => {
    const good = docBody(DOC_CHUNK_SIGNATURES, "\r\n");
    const cases: Buffer[] = [
      Buffer.concat([good, Buffer.from("x")]), // data after the end
      Buffer.from(good.toString("latin1").replace("10000;chunk-signature=", "1000g;chunk-signature="), "latin1"),
      Buffer.from(good.toString("latin1").replace("10000;chunk-signature=", "10000;chunk-signature ="), "latin1"),
      Buffer.from(good.toString("latin1").replace(`10000;chunk-signature=${DOC_CHUNK_SIGNATURES[0]}\r\n`, `10000;chunk-signature=${DOC_CHUNK_SIGNATURES[0]}\n`), "latin1"),
      Buffer.from(good.toString("latin1").replace("\r\n400;", "\n\n400;"), "latin1"), // data not followed by CRLF
      Buffer.from(good.toString("latin1").replace("\r\n400;", "xx\r\n400;"), "latin1"),
      Buffer.from(`${"0".repeat(600)}\r\n`), // a line too long
      Buffer.from(`1000001;chunk-signature=${DOC_CHUNK_SIGNATURES[0]}\r\n`), // larger than 16 MiB
    ];
    for (const body of cases) {
      const out = await docPayload(docRequest(), body);
      expect(out.error).toBe("400 InvalidRequest");
      expect(out.bytes.length).toBeLessThan(DOC.object.length);
    }
  });
});

describe("aws-chunked: other signed bodies (an independent signer after AWS's documentation)", () => {
  const claimFor = (payloadHash: string): SigV4Claim => ({
    accessKeyId: "AKIAIOSFODNN7EXAMPLE",
    date: "20130524",
    amzDate: DOC.amzDate,
    region: "us-east-1",
    service: "s3",
    signedHeaders: ["host"],
    signature: DOC_SEED,
    presigned: false,
    payloadHash,
  });
  const headersOf = (h: Record<string, string>) => ({ get: (n: string) => h[n] ?? null });
  const decode = (body: string, payloadHash: string, headers: Record<string, string>, pieceSize = 999) =>
    consume(payloadOf(inPieces(Buffer.from(body, "hex"), pieceSize), claimFor(payloadHash), Buffer.from(signer.key!, "hex"), headersOf(headers)));

  test("the signing key is the one verifySigV4 derives (aws4fetch's)", async () => {
    const { signingKey } = await verify(docRequest(), DOC_AT, DOC.secret);
    expect(Buffer.from(signingKey).toString("hex")).toBe(signer.key!);
  });

  test("three chunks; an x-amz-checksum-crc32 header; Content-Length", async () => {
    const data = Buffer.from(signer.data!, "hex");
    const headers = { "x-amz-decoded-content-length": String(data.length), "x-amz-checksum-crc32": signer.crc32!, "content-length": String(signer.plain!.length / 2) };
    const out = await decode(signer.plain!, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", headers);
    expect(out.error).toBeUndefined();
    expect(out.bytes.equals(data)).toBe(true);
    const wrongCrc = await decode(signer.plain!, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", { ...headers, "x-amz-checksum-crc32": "AAAAAA==" });
    expect(wrongCrc.error).toBe("400 BadDigest");
    expect(wrongCrc.bytes.length).toBeLessThan(data.length);
    expect((await decode(signer.plain!, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", { ...headers, "content-length": "99999" })).error).toBe("400 IncompleteBody");
  });

  test("signed trailers with CRC32 and SHA1 decode; a correctly signed but wrong SHA-256 is BadDigest", async () => {
    const data = Buffer.from(signer.data!, "hex");
    const length = { "x-amz-decoded-content-length": String(data.length) };
    for (const [body, trailer] of [
      [signer.trailerCrc32!, "x-amz-checksum-crc32"],
      [signer.trailerSha1!, "x-amz-checksum-sha1"],
    ] as const) {
      const out = await decode(body, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", { ...length, "x-amz-trailer": trailer });
      expect(out.error).toBeUndefined();
      expect(out.bytes.equals(data)).toBe(true);
      // The trailer must be the one x-amz-trailer declared.
      expect((await decode(body, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", { ...length, "x-amz-trailer": "x-amz-checksum-sha256" })).error).toBe("400 InvalidRequest");
    }
    const wrong = await decode(signer.trailerWrongSha256!, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", { ...length, "x-amz-trailer": "x-amz-checksum-sha256" });
    expect(wrong.error).toBe("400 BadDigest");
    expect(wrong.bytes.length).toBeLessThan(data.length);
  });

  test("a signed body is not read as unsigned chunks, nor an unsigned one as signed", async () => {
    const data = Buffer.from(signer.data!, "hex");
    expect((await decode(signer.plain!, "STREAMING-UNSIGNED-PAYLOAD-TRAILER", { "x-amz-decoded-content-length": String(data.length) })).error).toBe("400 InvalidRequest");
    const unsigned = Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from("\r\n0\r\n\r\n")]).toString("hex");
    expect((await decode(unsigned, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", { "x-amz-decoded-content-length": String(data.length) })).error).toBe("400 InvalidRequest");
    expect((await decode(unsigned, "STREAMING-UNSIGNED-PAYLOAD-TRAILER", { "x-amz-decoded-content-length": String(data.length) })).bytes.equals(data)).toBe(true);
  });
});

describe("bodies of botocore's requests", () => {
  /** The captured request verified, its payload read in pieces of 1000 bytes. */
  async function payloadOfCaptured(req: Received, body: Uint8Array = req.body, headers = req.headers) {
    const { claim, signingKey } = await verify(req);
    return consume(payloadOf(inPieces(body, 1000), claim, signingKey, headers));
  }

  test("STREAMING-UNSIGNED-PAYLOAD-TRAILER with a CRC32 (1 MiB-chunked by botocore) and a SHA-256 trailer", async () => {
    const crc = await payloadOfCaptured(captured("putTrailer"));
    expect(crc.error).toBeUndefined();
    expect(crc.bytes.equals(Buffer.alloc(100000, "x"))).toBe(true);
    const sha = await payloadOfCaptured(captured("putTrailerSha256"));
    expect(sha.error).toBeUndefined();
    expect(sha.bytes.equals(Buffer.alloc(3000, "y"))).toBe(true);
  });

  test("STREAMING-UNSIGNED-PAYLOAD-TRAILER: a changed byte or checksum is BadDigest; a missing trailer, a cut body fail", async () => {
    const req = captured("putTrailer");
    const text = req.body.toString("latin1");
    const checksum = /x-amz-checksum-crc32:(\S+)\r\n/.exec(text)![1]!;
    const changedData = Buffer.from(req.body);
    changedData[500] = 0x79;
    for (const body of [changedData, Buffer.from(text.replace(checksum, "AAAAAA=="), "latin1")]) {
      const out = await payloadOfCaptured(req, body);
      expect(out.error).toBe("400 BadDigest");
      expect(out.bytes.length).toBeLessThan(100000);
    }
    expect((await payloadOfCaptured(req, Buffer.from(text.replace(`x-amz-checksum-crc32:${checksum}\r\n`, ""), "latin1"))).error).toBe("400 InvalidRequest");
    expect((await payloadOfCaptured(req, Buffer.from(text.replace(checksum, "not base64!"), "latin1"))).error).toBe("400 InvalidRequest");
    const cut = await payloadOfCaptured(req, req.body.subarray(0, 100000));
    expect(cut.error).toBe("400 IncompleteBody");
    expect(cut.bytes.length).toBeLessThan(100000);
  });

  test("a plain body with its SHA-256 in x-amz-content-sha256 and a CRC32 header", async () => {
    const req = captured("put");
    const ok = await payloadOfCaptured(req);
    expect(ok).toEqual({ bytes: Buffer.from("hello world") });
    const changed = await payloadOfCaptured(req, Buffer.from("hello World"));
    expect(changed.error).toBe("400 XAmzContentSHA256Mismatch");
    expect(changed.bytes.length).toBeLessThan(11);
    const cut = await payloadOfCaptured(req, Buffer.from("hello worl"));
    expect(cut.error).toMatch(/^400 (IncompleteBody|XAmzContentSHA256Mismatch)$/);
    // The CRC32 header is signed, so a changed one fails verification; here only payloadOf sees it.
    const crcChanged = await payloadOfCaptured(req, req.body, withHeader(req, "x-amz-checksum-crc32", "AAAAAA==").headers);
    expect(crcChanged.error).toBe("400 BadDigest");
    expect(crcChanged.bytes.length).toBe(0);
  });

  test("each piece goes on as it arrives but the one that completes the declared length, which waits for the checks; without a length, each waits for the next", async () => {
    const { claim, signingKey } = await verify(captured("presigned"));
    const body = Buffer.from("The quick brown fox jumps");
    const order = async (headers: Record<string, string>) => {
      const events: string[] = [];
      async function* source() {
        for (let at = 0; at < body.length; at += 10) {
          events.push(`in ${at}`);
          yield body.subarray(at, at + 10);
        }
        events.push("end");
      }
      for await (const piece of payloadOf(source(), claim, signingKey, { get: (n) => headers[n] ?? null })) events.push(`out ${piece.length}`);
      return events;
    };
    expect({ declared: await order({ "content-length": String(body.length) }), undeclared: await order({}) }).toEqual({
      declared: ["in 0", "out 10", "in 10", "out 10", "in 20", "end", "out 5"],
      undeclared: ["in 0", "in 10", "out 10", "in 20", "out 10", "end", "out 5"],
    });
  });

  test("Content-MD5 and flexible checksums on an UNSIGNED-PAYLOAD body", async () => {
    const req = captured("presigned");
    const { claim, signingKey } = await verify(req);
    const body = Buffer.from("The quick brown fox");
    const md5 = new Bun.CryptoHasher("md5").update(body).digest("base64");
    const sha1 = new Bun.CryptoHasher("sha1").update(body).digest("base64");
    const read = (h: Record<string, string>, b = body) => consume(payloadOf(inPieces(b, 4), claim, signingKey, { get: (n) => h[n] ?? null }));
    expect(await read({})).toEqual({ bytes: body });
    expect(await read({ "content-md5": md5, "x-amz-checksum-sha1": sha1 })).toEqual({ bytes: body });
    expect((await read({ "content-md5": md5 }, Buffer.from("The quick brown box"))).error).toBe("400 BadDigest");
    expect((await read({ "content-md5": "abc" })).error).toBe("400 InvalidDigest");
    expect((await read({ "x-amz-checksum-sha1": sha1 }, Buffer.from("The quick brown box"))).error).toBe("400 BadDigest");
    expect((await read({ "x-amz-checksum-sha1": sha1, "x-amz-checksum-crc32": "AAAAAA==" })).error).toBe("400 InvalidRequest");
    expect((await read({ "x-amz-checksum-crc32c": "AAAA" })).error).toBe("400 InvalidRequest");
    expect((await read({ "x-amz-checksum-crc64nvme": "AAAAAAAAAAA=" })).error).toBe("400 InvalidRequest");
    expect((await read({ "x-amz-trailer": "x-amz-checksum-crc32" })).error).toBe("400 InvalidRequest");
    expect((await read({ "content-length": "18" })).error).toBe("400 InvalidRequest");
    expect((await read({ "content-length": "20" })).error).toBe("400 IncompleteBody");
  });

  test("CRC32C checksums (the project's WebAssembly crc32c, incremental) of a header", async () => {
    const req = captured("presigned");
    const { claim, signingKey } = await verify(req);
    // The AWS trailer example's object: 66560 × 'a' has CRC32C sOO8/Q==.
    const read = (value: string) => consume(payloadOf(inPieces(DOC.object, 333), claim, signingKey, { get: (n) => (n === "x-amz-checksum-crc32c" ? value : null) }));
    expect((await read("sOO8/Q==")).bytes.equals(DOC.object)).toBe(true);
    expect((await read("sOO8/A==")).error).toBe("400 BadDigest");
  });
});

describe("S3 error XML", () => {
  test("escapes, and adds the extras", () => {
    const err = new S3Error(403, "SignatureDoesNotMatch", "a <b> & 'c'", { StringToSign: "AWS4\n<x>", Bad: "\u0001" });
    expect(s3ErrorXml(err, "/bkt/a&b", "REQ1")).toBe(
      `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SignatureDoesNotMatch</Code><Message>a &lt;b&gt; &amp; &apos;c&apos;</Message>` +
        `<Resource>/bkt/a&amp;b</Resource><RequestId>REQ1</RequestId><StringToSign>AWS4\n&lt;x&gt;</StringToSign><Bad>\uFFFD</Bad></Error>`,
    );
    expect(err).toBeInstanceOf(Error);
    expect(err.status).toBe(403);
    expect(() => s3ErrorXml(new S3Error(400, "X", "m", { "not a name": "v" }), "/", "r")).toThrow(TypeError);
  });
});
