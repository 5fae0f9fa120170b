// test-lists: postgres-s3
// The S3 endpoint (CONTRACT §16) with real clients on the run's backend and WORKERS (SQLite + disk
// with one process, PostgreSQL + S3 with two; nothing here is about two processes): an access
// key from `cubby keys create --s3`; the AWS CLI (`s3` and `s3api`: buckets, cp both ways,
// sync, ls, rm, multipart, copy, delete-objects, presign); boto3 (presigned GET and PUT,
// multipart with checksums, paged and delimited listings); rclone's s3 backend (sync both ways,
// check); an object put through S3 is a File over REST and through WebDAV; hostile requests
// (bad, unknown and expired signatures, a wrong payload hash, bad keys) change nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, createHmac } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { run, which } from "../support/dav.ts";
import { runCli, startServer, tempDir, type RunningServer } from "../support/server.ts";
import { testNeeding } from "../support/tools.ts";
import { bytesOf, treeOf, writeTree } from "../support/trees.ts";
import { waitFor } from "../support/wait.ts";
import { startReceiver } from "../support/webhook-receiver.ts";
import { AwsClient } from "aws4fetch";

/** The AWS CLI: Debian's (v2) when installed, else whichever is on PATH. */
const AWS = fs.existsSync("/usr/bin/aws") ? "/usr/bin/aws" : which("aws");
/** Pythons with boto3: Debian's and the one on PATH, when they differ (old and new botocore). */
const PYTHONS = [...new Set(["/usr/bin/python3", which("python3") ?? ""])].filter((p) => p !== "" && Bun.spawnSync([p, "-c", "import boto3"]).exitCode === 0);

const awsTest = testNeeding("the AWS CLI tests", AWS === null ? ["awscli (apt-get install awscli)"] : []);
const botoTest = testNeeding("the boto3 tests", PYTHONS.length === 0 ? ["boto3 (apt-get install python3-boto3)"] : []);
const rcloneTest = testNeeding("the rclone tests", which("rclone") === null ? ["rclone (apt-get install rclone)"] : []);
const resticTest = testNeeding("the restic tests", which("restic") === null ? ["restic (apt-get install restic)"] : []);
const s3cmdTest = testNeeding("the s3cmd tests", which("s3cmd") === null ? ["s3cmd (apt-get install s3cmd)"] : []);

let server: RunningServer;
let apiKey: string;
let id: string;
let secret: string;
let tmpRoot: ReturnType<typeof tempDir>;

beforeAll(async () => {
  server = await startServer({ checkResponses: false });
  apiKey = await server.mintKey("s3@example.com");
  const minted = await server.mintKey("s3@example.com", "--s3", "--name", "tools");
  const lines = minted.split("\n");
  expect(lines).toHaveLength(2);
  id = lines[0]!.replace(/^AWS_ACCESS_KEY_ID=/, "");
  secret = lines[1]!.replace(/^AWS_SECRET_ACCESS_KEY=/, "");
  expect(id).toMatch(/^CUBBY[0-9A-Z]{16}$/);
  expect(secret).toMatch(/^[0-9A-Za-z]{40}$/);
  tmpRoot = tempDir("cubby-s3-");
}, 60_000);
afterAll(async () => {
  await server?.[Symbol.asyncDispose]();
  tmpRoot?.[Symbol.dispose]();
});

/** The environment every client runs with: the key, a region, no config files of the machine's. */
function clientEnv(home: string): Record<string, string> {
  const config = path.join(home, "aws-config");
  fs.writeFileSync(config, "[default]\nregion = us-east-1\ns3 =\n  addressing_style = path\n  multipart_threshold = 5MB\n  multipart_chunksize = 5MB\n");
  return { AWS_ACCESS_KEY_ID: id, AWS_SECRET_ACCESS_KEY: secret, AWS_DEFAULT_REGION: "us-east-1", AWS_CONFIG_FILE: config, AWS_SHARED_CREDENTIALS_FILE: path.join(home, "none"), HOME: home, AWS_EC2_METADATA_DISABLED: "true" };
}

/** Runs the AWS CLI against the server. @throws with its stderr when it fails */
async function aws(home: string, ...args: string[]): Promise<string> {
  const r = await run(AWS!, ["--endpoint-url", server.url, ...args], { env: clientEnv(home), timeoutMs: 120_000 });
  if (r.code !== 0) throw new Error(`aws ${args.join(" ")} exited ${r.code}:\n${r.stderr}`);
  return r.stdout;
}

/** A REST call with the API key. */
async function rest(target: string): Promise<Response> {
  return fetch(`${server.url}${target}`, { headers: { authorization: `Bearer ${apiKey}` } });
}

/** A tree of 60 files in three levels, sizes 0 to ~7 MiB (one over the multipart threshold). */
const TREE = { top: 3, middle: 4, files: 5, sizeOf: (n: number) => (n === 5 ? 7 * 1024 * 1024 + 3 : n % 11 === 0 ? 0 : (n * 7919) % 30_000) };

/**
 * A header-signed request by hand, following AWS's documented steps (the hostile cases need
 * requests no client sends), sent with node:http so that its path goes as written.
 */
async function signed(
  method: string,
  target: string,
  body: Buffer,
  opts: { secret?: string; id?: string; date?: Date; payloadHash?: string; chunks?: Buffer[]; badChunk?: number } = {},
): Promise<{ status: number; text: string }> {
  const base = new URL(server.url);
  const q = target.indexOf("?");
  const rawPath = q === -1 ? target : target.slice(0, q);
  const params = new URLSearchParams(q === -1 ? "" : target.slice(q + 1));
  const amzDate = (opts.date ?? new Date()).toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
  const day = amzDate.slice(0, 8);
  const sha256 = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");
  const payloadHash = opts.chunks !== undefined ? "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" : (opts.payloadHash ?? sha256(body));
  const headers: Record<string, string> = { host: base.host, "x-amz-content-sha256": payloadHash, "x-amz-date": amzDate };
  if (opts.chunks !== undefined) {
    headers["content-encoding"] = "aws-chunked";
    headers["x-amz-decoded-content-length"] = String(opts.chunks.reduce((n, c) => n + c.length, 0));
  }
  const names = Object.keys(headers).sort();
  const enc = (x: string) => encodeURIComponent(x).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const query = [...params].map(([k, v]) => `${enc(k)}=${enc(v)}`).sort().join("&");
  const canonical = [method, rawPath, query, names.map((h) => `${h}:${headers[h]}\n`).join(""), names.join(";"), payloadHash].join("\n");
  const scope = `${day}/us-east-1/s3/aws4_request`;
  const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, createHash("sha256").update(canonical).digest("hex")].join("\n");
  let k: Buffer = createHmac("sha256", `AWS4${opts.secret ?? secret}`).update(day).digest();
  for (const part of ["us-east-1", "s3", "aws4_request"]) k = createHmac("sha256", k).update(part).digest();
  const signature = createHmac("sha256", k).update(toSign).digest("hex");
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${opts.id ?? id}/${scope}, SignedHeaders=${names.join(";")}, Signature=${signature}`;
  if (opts.chunks !== undefined) {
    // aws-chunked (AWS, "Signature Calculations for the Authorization Header: Transferring Payload
    // in Multiple Chunks"): each chunk signed over the previous signature, then an empty one.
    let previous = signature;
    const parts: Buffer[] = [];
    for (const [i, data] of [...opts.chunks, Buffer.alloc(0)].entries()) {
      const chunkToSign = ["AWS4-HMAC-SHA256-PAYLOAD", amzDate, scope, previous, sha256(""), sha256(data)].join("\n");
      previous = createHmac("sha256", k).update(chunkToSign).digest("hex");
      const sent = i === opts.badChunk ? previous.replace(/^./, (c) => (c === "0" ? "1" : "0")) : previous;
      parts.push(Buffer.from(`${data.length.toString(16)};chunk-signature=${sent}\r\n`), data, Buffer.from("\r\n"));
    }
    body = Buffer.concat(parts);
  }
  headers["content-length"] = String(body.length);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: base.hostname, port: base.port, method, path: target, headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("S3 access keys", () => {
  test("keys create --s3 prints two lines; the key is listed with its access key ID and never its secret", async () => {
    const r = await fetch(`${server.url}/auth/keys`, { headers: { cookie: await server.signIn("s3@example.com") } });
    const keys = ((await r.json()) as { keys: { access_key_id?: string; name: string }[] }).keys;
    const s3 = keys.find((k) => k.access_key_id === id);
    expect(s3?.name).toBe("tools");
    expect(JSON.stringify(keys)).not.toContain(secret);
  });
});

describe("the AWS CLI", () => {
  awsTest(
    "buckets, cp both ways, ls, sync up and down byte for byte, rm; the object is a File over REST and WebDAV",
    async () => {
      using tmp = tempDir("cubby-aws-");
      const home = tmp.path;
      await aws(home, "s3", "mb", "s3://photos");
      expect(await aws(home, "s3", "ls")).toContain("photos");
      const small = path.join(home, "hello.txt");
      fs.writeFileSync(small, "hello through S3\n");
      await aws(home, "s3", "cp", small, "s3://photos/2026/trip/hello.txt");
      // A File over REST, in the folders the key named, private by default.
      const folders = (await (await rest("/v1/folders")).json()) as { folders: { id: string; name: string }[] };
      expect(folders.folders.map((f) => f.name)).toContain("photos");
      const dav = await fetch(`${server.url}/dav/photos/2026/trip/hello.txt`, { headers: { authorization: `Basic ${Buffer.from(`x:${apiKey}`).toString("base64")}` } });
      expect(dav.status).toBe(200);
      expect(await dav.text()).toBe("hello through S3\n");
      const listed = await aws(home, "s3", "ls", "--recursive", "s3://photos");
      expect(listed).toContain("2026/trip/hello.txt");
      const back = path.join(home, "back.txt");
      await aws(home, "s3", "cp", "s3://photos/2026/trip/hello.txt", back);
      expect(fs.readFileSync(back, "utf8")).toBe("hello through S3\n");

      const up = path.join(home, "up");
      const down = path.join(home, "down");
      writeTree(up, TREE);
      await aws(home, "s3", "sync", up, "s3://photos/tree");
      await aws(home, "s3", "sync", "s3://photos/tree", down);
      const local = treeOf(up);
      expect(local.size).toBe(60);
      expect(treeOf(down)).toEqual(local);
      // A second sync finds nothing to do.
      expect((await aws(home, "s3", "sync", up, "s3://photos/tree")).trim()).toBe("");

      await aws(home, "s3", "rm", "--recursive", "s3://photos/tree");
      const left = JSON.parse((await aws(home, "s3api", "list-objects-v2", "--bucket", "photos", "--prefix", "tree/")) || "{}") as { Contents?: unknown[] };
      expect(left.Contents ?? []).toEqual([]);
    },
    240_000,
  );

  awsTest(
    "s3api: multipart by hand (list parts, list uploads, complete), copy-object, delete-objects, head, a presigned GET",
    async () => {
      using tmp = tempDir("cubby-s3api-");
      const home = tmp.path;
      await aws(home, "s3api", "create-bucket", "--bucket", "api");
      const created = JSON.parse(await aws(home, "s3api", "create-multipart-upload", "--bucket", "api", "--key", "big/one.bin")) as { UploadId: string };
      // Never a leading '-', which the CLI would take for an option.
      expect(created.UploadId).toMatch(/^mp[A-Za-z0-9_-]+$/);
      const part1 = bytesOf(5 * 1024 * 1024, 1);
      const part2 = bytesOf(1234, 2);
      fs.writeFileSync(path.join(home, "p1"), part1);
      fs.writeFileSync(path.join(home, "p2"), part2);
      const e1 = JSON.parse(await aws(home, "s3api", "upload-part", "--bucket", "api", "--key", "big/one.bin", "--upload-id", created.UploadId, "--part-number", "1", "--body", path.join(home, "p1"))) as { ETag: string };
      const e2 = JSON.parse(await aws(home, "s3api", "upload-part", "--bucket", "api", "--key", "big/one.bin", "--upload-id", created.UploadId, "--part-number", "2", "--body", path.join(home, "p2"))) as { ETag: string };
      const parts = JSON.parse(await aws(home, "s3api", "list-parts", "--bucket", "api", "--key", "big/one.bin", "--upload-id", created.UploadId)) as { Parts: { PartNumber: number; Size: number }[] };
      expect(parts.Parts.map((p) => [p.PartNumber, p.Size])).toEqual([
        [1, part1.length],
        [2, part2.length],
      ]);
      const uploads = JSON.parse(await aws(home, "s3api", "list-multipart-uploads", "--bucket", "api")) as { Uploads: { Key: string; UploadId: string }[] };
      expect(uploads.Uploads.map((u) => u.Key)).toEqual(["big/one.bin"]);
      // Meanwhile GET /v1/uploads (and the dashboard) shows the upload and its parts under the key.
      const unfinished = (await (await rest("/v1/uploads")).json()) as { uploads: { name: string; length: number }[] };
      expect(unfinished.uploads.map((u) => [u.name, u.length]).sort()).toEqual([
        ["big/one.bin", 0],
        ["big/one.bin", part2.length],
        ["big/one.bin", part1.length],
      ]);
      const layout = { Parts: [{ PartNumber: 1, ETag: e1.ETag }, { PartNumber: 2, ETag: e2.ETag }] };
      await aws(home, "s3api", "complete-multipart-upload", "--bucket", "api", "--key", "big/one.bin", "--upload-id", created.UploadId, "--multipart-upload", JSON.stringify(layout));
      await aws(home, "s3", "cp", "s3://api/big/one.bin", path.join(home, "joined"));
      expect(fs.readFileSync(path.join(home, "joined")).equals(Buffer.concat([part1, part2]))).toBe(true);
      const noUploads = JSON.parse((await aws(home, "s3api", "list-multipart-uploads", "--bucket", "api")) || "{}") as { Uploads?: unknown[] };
      expect(noUploads.Uploads ?? []).toEqual([]);

      await aws(home, "s3api", "copy-object", "--bucket", "api", "--key", "copy/two.bin", "--copy-source", "api/big/one.bin");
      const head = JSON.parse(await aws(home, "s3api", "head-object", "--bucket", "api", "--key", "copy/two.bin")) as { ContentLength: number; ETag: string };
      expect(head.ContentLength).toBe(part1.length + part2.length);

      const url = (await aws(home, "s3", "presign", "s3://api/copy/two.bin", "--expires-in", "60")).trim();
      const got = await fetch(url);
      expect(got.status).toBe(200);
      expect(Buffer.from(await got.arrayBuffer()).equals(Buffer.concat([part1, part2]))).toBe(true);

      const deleted = JSON.parse(await aws(home, "s3api", "delete-objects", "--bucket", "api", "--delete", JSON.stringify({ Objects: [{ Key: "copy/two.bin" }, { Key: "big/one.bin" }, { Key: "never/was.txt" }] }))) as { Deleted: { Key: string }[] };
      expect(deleted.Deleted.map((d) => d.Key).sort()).toEqual(["big/one.bin", "copy/two.bin", "never/was.txt"]);
      const left = JSON.parse((await aws(home, "s3api", "list-objects-v2", "--bucket", "api")) || "{}") as { Contents?: unknown[] };
      expect(left.Contents ?? []).toEqual([]);
      // An emptied bucket's folders stay; a bucket with folders is not empty, one without is deleted.
      await aws(home, "s3", "mb", "s3://empty-one");
      await aws(home, "s3", "rb", "s3://empty-one");
      expect(await aws(home, "s3", "ls")).not.toContain("empty-one");
    },
    120_000,
  );
});

describe("boto3", () => {
  botoTest(
    "presigned GET and PUT, multipart with checksums, listings paged and delimited, errors as S3's codes",
    async () => {
      for (const python of PYTHONS) {
        using tmp = tempDir("cubby-boto-");
        const script = `
import boto3, botocore, json, sys, urllib.request, hashlib
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1", config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
bucket = sys.argv[2]
s3.create_bucket(Bucket=bucket)
url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "pre/put.txt"}, ExpiresIn=60)
req = urllib.request.Request(url, data=b"put by a presigned URL", method="PUT")
assert urllib.request.urlopen(req).status == 200
url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "pre/put.txt"}, ExpiresIn=60)
assert urllib.request.urlopen(url).read() == b"put by a presigned URL"
for i in range(7):
    s3.put_object(Bucket=bucket, Key="list/%d/f.txt" % i, Body=b"x" * i)
    s3.put_object(Bucket=bucket, Key="list/f%d.txt" % i, Body=b"y" * i)
keys, token = [], None
while True:
    kw = {"Bucket": bucket, "Prefix": "list/", "MaxKeys": 3}
    if token: kw["ContinuationToken"] = token
    page = s3.list_objects_v2(**kw)
    keys += [o["Key"] for o in page.get("Contents", [])]
    if not page["IsTruncated"]: break
    token = page["NextContinuationToken"]
assert keys == sorted(keys, key=lambda k: k.encode()), keys
assert len(keys) == 14, keys
d = s3.list_objects_v2(Bucket=bucket, Prefix="list/", Delimiter="/")
assert [p["Prefix"] for p in d["CommonPrefixes"]] == ["list/%d/" % i for i in range(7)], d
assert [o["Key"] for o in d["Contents"]] == ["list/f%d.txt" % i for i in range(7)], d
v1 = s3.list_objects(Bucket=bucket, Prefix="list/f", MaxKeys=2)
assert [o["Key"] for o in v1["Contents"]] == ["list/f0.txt", "list/f1.txt"] and v1["IsTruncated"], v1
part = b"p" * (5 * 1024 * 1024)
mp = s3.create_multipart_upload(Bucket=bucket, Key="mp/all.bin", ChecksumAlgorithm="CRC32C") if hasattr(s3, "create_multipart_upload") else None
uid = mp["UploadId"]
p1 = s3.upload_part(Bucket=bucket, Key="mp/all.bin", UploadId=uid, PartNumber=1, Body=part)
p2 = s3.upload_part(Bucket=bucket, Key="mp/all.bin", UploadId=uid, PartNumber=2, Body=b"tail")
s3.complete_multipart_upload(Bucket=bucket, Key="mp/all.bin", UploadId=uid, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p1["ETag"]}, {"PartNumber": 2, "ETag": p2["ETag"]}]})
body = s3.get_object(Bucket=bucket, Key="mp/all.bin")["Body"].read()
assert body == part + b"tail"
r = s3.get_object(Bucket=bucket, Key="mp/all.bin", Range="bytes=5242878-5242881")
assert r["Body"].read() == b"pptail"[:4] and r["ContentRange"] == "bytes 5242878-5242881/5242884", r["ContentRange"]
h = s3.head_object(Bucket=bucket, Key="mp/all.bin")
etag = h["ETag"]
assert etag.endswith('-1"'), etag
assert s3.get_object(Bucket=bucket, Key="mp/all.bin", IfMatch=etag)["ContentLength"] == len(part) + 4
for kw, status in [({"IfMatch": '"other-1"'}, 412), ({"IfNoneMatch": etag}, 304), ({"IfUnmodifiedSince": "2001-01-01T00:00:00Z"}, 412)]:
    try:
        s3.get_object(Bucket=bucket, Key="mp/all.bin", **kw); assert False, kw
    except botocore.exceptions.ClientError as e:
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == status, (kw, e.response)
try:
    s3.get_object(Bucket=bucket, Key="no/such.txt"); assert False
except botocore.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "NoSuchKey", e.response
try:
    s3.list_objects_v2(Bucket="no-such-bucket"); assert False
except botocore.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "NoSuchBucket", e.response
try:
    s3.delete_bucket(Bucket=bucket); assert False
except botocore.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "BucketNotEmpty", e.response
print("ok")
`;
        fs.writeFileSync(path.join(tmp.path, "boto.py"), script);
        const bucket = `boto-${path.basename(python).replace(/\W/g, "")}-${PYTHONS.indexOf(python)}`;
        const r = await run(python, [path.join(tmp.path, "boto.py"), server.url, bucket], { env: clientEnv(tmp.path), timeoutMs: 120_000 });
        expect(`${r.stdout}${r.stderr}`).toContain("ok");
        expect(r.code).toBe(0);
      }
    },
    240_000,
  );
});

describe("rclone (s3 backend)", () => {
  rcloneTest(
    "syncs a tree up, checks it, syncs it back down byte for byte",
    async () => {
      using tmp = tempDir("cubby-rclone-s3-");
      const up = path.join(tmp.path, "up");
      const down = path.join(tmp.path, "down");
      writeTree(up, TREE);
      // AWS_CA_BUNDLE (set on some machines) makes rclone's AWS SDK refuse its own HTTP transport.
      const env = { RCLONE_CONFIG: path.join(tmp.path, "none.conf"), HOME: tmp.path, AWS_CA_BUNDLE: "" };
      const flags = ["--s3-provider", "Other", "--s3-endpoint", server.url, "--s3-access-key-id", id, "--s3-secret-access-key", secret, "--s3-region", "us-east-1", "--s3-force-path-style", "--retries", "1"];
      const rclone = async (...args: string[]) => {
        const r = await run("rclone", [...args, ...flags], { env, timeoutMs: 180_000 });
        if (r.code !== 0) throw new Error(`rclone ${args.join(" ")} exited ${r.code}:\n${r.stderr}`);
        return r;
      };
      await rclone("mkdir", ":s3:rclone");
      await rclone("sync", up, ":s3:rclone/tree");
      const check = await rclone("check", up, ":s3:rclone/tree");
      expect(check.stderr).toContain("0 differences found");
      await rclone("sync", ":s3:rclone/tree", down);
      expect(treeOf(down)).toEqual(treeOf(up));
    },
    240_000,
  );
});

describe("restic (s3 repository)", () => {
  resticTest(
    "init, backup, check --read-data, restore byte for byte",
    async () => {
      using tmp = tempDir("cubby-restic-");
      const data = path.join(tmp.path, "data");
      writeTree(data, TREE);
      const env = { ...clientEnv(tmp.path), RESTIC_PASSWORD: "correct horse", RESTIC_REPOSITORY: `s3:${server.url}/restic/repo`, RESTIC_CACHE_DIR: path.join(tmp.path, "cache") };
      const restic = async (...args: string[]) => {
        const r = await run("restic", args, { env, timeoutMs: 180_000 });
        if (r.code !== 0) throw new Error(`restic ${args.join(" ")} exited ${r.code}:\n${r.stderr}`);
        return r;
      };
      await restic("init");
      await restic("backup", data);
      await restic("check", "--read-data");
      await restic("restore", "latest", "--target", path.join(tmp.path, "restored"));
      expect(treeOf(path.join(tmp.path, "restored", path.relative("/", data)))).toEqual(treeOf(data));
    },
    240_000,
  );
});

describe("s3cmd", () => {
  s3cmdTest(
    "mb, put, ls, get, del",
    async () => {
      using tmp = tempDir("cubby-s3cmd-");
      const host = new URL(server.url).host;
      const cfg = path.join(tmp.path, "s3cfg");
      fs.writeFileSync(cfg, `[default]\naccess_key = ${id}\nsecret_key = ${secret}\nhost_base = ${host}\nhost_bucket = ${host}\nuse_https = False\nsignature_v2 = False\nbucket_location = us-east-1\n`);
      const s3cmd = async (...args: string[]) => {
        const r = await run("s3cmd", ["-c", cfg, ...args], { env: { HOME: tmp.path }, timeoutMs: 60_000 });
        if (r.code !== 0) throw new Error(`s3cmd ${args.join(" ")} exited ${r.code}:\n${r.stderr}`);
        return r.stdout;
      };
      await s3cmd("mb", "s3://s3cmd");
      fs.writeFileSync(path.join(tmp.path, "a.txt"), "from s3cmd\n");
      // s3cmd compares an ETag without a '-' with the file's MD5: eight PUTs (each a new blob
      // name) would have met one with no '-' with a chance of 1 - (1/3)^8 before ETags had "-1".
      for (let i = 0; i < 8; i++) await s3cmd("put", path.join(tmp.path, "a.txt"), "s3://s3cmd/x/a.txt");
      expect(await s3cmd("ls", "-r", "s3://s3cmd")).toContain("s3://s3cmd/x/a.txt");
      await s3cmd("get", "s3://s3cmd/x/a.txt", path.join(tmp.path, "b.txt"));
      expect(fs.readFileSync(path.join(tmp.path, "b.txt"), "utf8")).toBe("from s3cmd\n");
      await s3cmd("del", "s3://s3cmd/x/a.txt");
      expect(await s3cmd("ls", "-r", "s3://s3cmd")).not.toContain("a.txt");
    },
    120_000,
  );
});

describe("hostile requests change nothing", () => {
  test("a bad signature, an unknown key, a skewed clock, a wrong payload hash, bad keys: S3's XML error, nothing stored", async () => {
    expect((await signed("PUT", "/hostile", Buffer.alloc(0))).status).toBe(200);
    const x = Buffer.from("x");
    const cases: [string, Promise<{ status: number; text: string }>, number, string][] = [
      ["wrong secret", signed("PUT", "/hostile/a.txt", x, { secret: "W".repeat(40) }), 403, "SignatureDoesNotMatch"],
      ["unknown key", signed("PUT", "/hostile/a.txt", x, { id: "CUBBY0000000000000000" }), 403, "InvalidAccessKeyId"],
      ["an hour off", signed("PUT", "/hostile/a.txt", x, { date: new Date(Date.now() - 3600_000) }), 403, "RequestTimeTooSkewed"],
      ["another body's hash", signed("PUT", "/hostile/a.txt", x, { payloadHash: createHash("sha256").update("y").digest("hex") }), 400, "XAmzContentSHA256Mismatch"],
      ["a '..' segment", signed("PUT", "/hostile/a/../b.txt", x), 400, "InvalidArgument"],
      ["an empty segment", signed("PUT", "/hostile/a//b.txt", x), 400, "InvalidArgument"],
      ["a control character", signed("PUT", "/hostile/a%01b.txt", x), 400, "InvalidArgument"],
      ["a key over 1 024 bytes", signed("PUT", `/hostile/${"k".repeat(1025)}`, x), 400, "KeyTooLongError"],
    ];
    for (const [what, pending, status, code] of cases) {
      const res = await pending;
      expect({ what, status: res.status, code: /<Code>([^<]*)<\/Code>/.exec(res.text)?.[1] }).toEqual({ what, status, code });
    }
    const listed = await signed("GET", "/hostile?list-type=2", Buffer.alloc(0));
    expect(listed.text).toContain("<KeyCount>0</KeyCount>");
  });

  test("an aws-chunked body is stored when every chunk signature holds, and not at all when one does not", async () => {
    const chunks = [bytesOf(65536, 1), bytesOf(65536, 2), bytesOf(1000, 3)];
    expect((await signed("PUT", "/chunked", Buffer.alloc(0))).status).toBe(200);
    const put = await signed("PUT", "/chunked/good.bin", Buffer.alloc(0), { chunks });
    expect(put).toEqual({ status: 200, text: "" });
    const got = await fetch(`${server.url}/dav/chunked/good.bin`, { headers: { authorization: `Basic ${Buffer.from(`x:${apiKey}`).toString("base64")}` } });
    expect(Buffer.from(await got.arrayBuffer()).equals(Buffer.concat(chunks))).toBe(true);
    for (const bad of [0, 2, 3]) {
      const res = await signed("PUT", `/chunked/bad-${bad}.bin`, Buffer.alloc(0), { chunks, badChunk: bad });
      expect({ bad, status: res.status, code: /<Code>([^<]*)<\/Code>/.exec(res.text)?.[1] }).toEqual({ bad, status: 403, code: "SignatureDoesNotMatch" });
      expect((await signed("HEAD", `/chunked/bad-${bad}.bin`, Buffer.alloc(0))).status).toBe(404);
    }
  });

  test("a revoked key is refused from the next request on", async () => {
    const [otherId, otherSecret] = (await server.mintKey("s3@example.com", "--s3")).split("\n").map((l) => l.split("=")[1]!) as [string, string];
    expect((await signed("PUT", "/revoked", Buffer.alloc(0), { id: otherId, secret: otherSecret })).status).toBe(200);
    const revoke = await runCli(["keys", "revoke", otherId, "--data-dir", server.dataDir]);
    expect(revoke.code).toBe(0);
    const res = await signed("GET", "/revoked?list-type=2", Buffer.alloc(0), { id: otherId, secret: otherSecret });
    expect(res.status).toBe(403);
    expect(res.text).toContain("<Code>InvalidAccessKeyId</Code>");
  });
});

describe("limits and events as on REST", () => {
  test("MAX_UPLOAD_BYTES (EntityTooLarge), the quota (QuotaExceeded, multipart parts reserved), the failed-authentication limit (SlowDown), webhooks' file.created and file.deleted", async () => {
    await using receiver = startReceiver();
    await using limited = await startServer({ checkResponses: false, env: { MAX_UPLOAD_BYTES: "300000", QUOTA_BYTES: "500000", WEBHOOK_ALLOWED_HOSTS: "127.0.0.1", RATE_LIMIT_AUTH_FAILURES: "3" } });
    const key = await limited.mintKey("limits@example.com");
    const hook = await fetch(`${limited.url}/v1/webhooks`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ url: receiver.url() }) });
    receiver.secret = ((await hook.json()) as { secret: string }).secret;
    const [keyId, keySecret] = (await limited.mintKey("limits@example.com", "--s3")).split("\n").map((l) => l.slice(l.indexOf("=") + 1)) as [string, string];
    // No retries: aws4fetch retries a 5xx ten times with backoff by default, which hid the
    // SlowDown below for 22 s (and would hide any 500).
    const s3 = new AwsClient({ accessKeyId: keyId, secretAccessKey: keySecret, service: "s3", region: "us-east-1", retries: 0 });
    const code = async (res: Response) => ({ status: res.status, code: /<Code>([^<]*)<\/Code>/.exec(await res.text())?.[1] });
    expect((await s3.fetch(`${limited.url}/lim`, { method: "PUT" })).status).toBe(200);

    expect(await code(await s3.fetch(`${limited.url}/lim/too-big.bin`, { method: "PUT", body: bytesOf(300_001, 1) }))).toEqual({ status: 400, code: "EntityTooLarge" });
    const ok = await s3.fetch(`${limited.url}/lim/ok.bin`, { method: "PUT", body: bytesOf(250_000, 2) });
    expect(ok.status).toBe(200);
    // 250 000 of 500 000 used: a second 260 000 does not fit.
    expect(await code(await s3.fetch(`${limited.url}/lim/over.bin`, { method: "PUT", body: bytesOf(260_000, 3) }))).toEqual({ status: 403, code: "QuotaExceeded" });
    const created = await s3.fetch(`${limited.url}/lim/mp.bin?uploads`, { method: "POST" });
    const uploadId = /<UploadId>([^<]*)</.exec(await created.text())![1]!;
    expect((await s3.fetch(`${limited.url}/lim/mp.bin?partNumber=1&uploadId=${uploadId}`, { method: "PUT", body: bytesOf(200_000, 4) })).status).toBe(200);
    // The first part holds 200 000 of what is left: a second part of 100 000 is refused.
    expect(await code(await s3.fetch(`${limited.url}/lim/mp.bin?partNumber=2&uploadId=${uploadId}`, { method: "PUT", body: bytesOf(100_000, 5) }))).toEqual({ status: 403, code: "QuotaExceeded" });
    expect((await s3.fetch(`${limited.url}/lim/mp.bin?uploadId=${uploadId}`, { method: "DELETE" })).status).toBe(204);
    // Aborted: its reservation is back.
    expect((await s3.fetch(`${limited.url}/lim/after-abort.bin`, { method: "PUT", body: bytesOf(200_000, 6) })).status).toBe(200);
    expect((await s3.fetch(`${limited.url}/lim/ok.bin`, { method: "DELETE" })).status).toBe(204);

    const files = (await (await fetch(`${limited.url}/v1/files`, { headers: { authorization: `Bearer ${key}` } })).json()) as { files: { name: string }[] };
    expect(files.files.map((f) => f.name).sort()).toEqual(["after-abort.bin"]);
    // Bad signatures count against the failed-authentication limit, across the workers: past
    // it the address is refused, the right key too, with S3's SlowDown and a Retry-After.
    const wrong = new AwsClient({ accessKeyId: keyId, secretAccessKey: "W".repeat(40), service: "s3", region: "us-east-1", retries: 0 });
    for (let i = 0; i < 3; i++) expect(await code(await wrong.fetch(`${limited.url}/lim?list-type=2`))).toEqual({ status: 403, code: "SignatureDoesNotMatch" });
    const slowed = await s3.fetch(`${limited.url}/lim?list-type=2`);
    expect({ retryAfter: slowed.headers.get("retry-after") !== null, ...(await code(slowed)) }).toEqual({ retryAfter: true, status: 503, code: "SlowDown" });
    await waitFor(() => receiver.accepted().filter((r) => r.verified).length >= 3, "three webhook deliveries", 15_000);
    expect(receiver.accepted().map((r) => `${r.type} ${r.data.file?.name}`).sort()).toEqual(["file.created after-abort.bin", "file.created ok.bin", "file.deleted ok.bin"]);
  }, 60_000);
});

