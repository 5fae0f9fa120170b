// test-lists: workers postgres-s3
// Resumable uploads (tus 1.0.0, CONTRACT §8) against the real server on the configured stores:
// tus-js-client through a real nginx that caps request bodies at 16 MiB; a server SIGKILLed mid
// upload and restarted on the same data directory, resumed from HEAD's offset; the protocol's
// refusals (409, 460, 412), termination, and the expiry sweep of an unfinished upload.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { checksumOf } from "../../src/domain/checksum.ts";
import { BACKEND, blobNames, runSql } from "../support/backend.ts";
import { startNginx } from "../support/nginx.ts";
import { freePort } from "../support/processes.ts";
import { client, startServer, tempDir, type FileJson, type RunningServer } from "../support/server.ts";
import { createUpload, headOffset, patchChunk, randomFile, tusFetch, tusUpload } from "../support/tus.ts";
import { waitFor } from "../support/wait.ts";

const MiB = 1024 * 1024;
let server: RunningServer;
let key: string;
let work: { path: string } & Disposable;

beforeAll(async () => {
  server = await startServer();
  key = await server.mintKey("tus@example.com");
  work = tempDir("cubby-tus-");
});

afterAll(async () => {
  await server?.[Symbol.asyncDispose]();
  work?.[Symbol.dispose]();
});

const fileOf = async (s: { url: string }, id: string) => (await (await client(s, key).fetch(`/v1/files/${id}`)).json()) as FileJson;

test("OPTIONS advertises the version, extensions, limit and checksum algorithms", async () => {
  const res = await fetch(`${server.url}/v1/uploads`, { method: "OPTIONS" });
  expect(res.status).toBe(204);
  expect({
    resumable: res.headers.get("tus-resumable"),
    version: res.headers.get("tus-version"),
    extensions: res.headers.get("tus-extension"),
    max: res.headers.get("tus-max-size"),
    algorithms: res.headers.get("tus-checksum-algorithm"),
  }).toEqual({
    resumable: "1.0.0",
    version: "1.0.0",
    extensions: "creation,creation-with-upload,termination,expiration,checksum,concatenation",
    max: "10737418240",
    algorithms: "crc32c,sha1",
  });
});

test("tus-js-client uploads 256 MiB through nginx capping bodies at 16 MiB; a single-request upload gets nginx's 413", async () => {
  const source = randomFile(work.path, "big.bin", 256 * MiB);
  await using nginx = await startNginx([server.port], "client_max_body_size 16m;");
  const done = await tusUpload(source.path, { endpoint: `${nginx.url}/v1/uploads`, token: key, chunkSize: 8 * MiB, metadata: { filename: "big.bin", filetype: "application/x-test" } });
  expect(done.fileId).not.toBeNull();
  const file = await fileOf(server, done.fileId!);
  expect({ size: file.size, checksum: file.checksum, name: file.name, type: file.content_type }).toEqual({
    size: String(256 * MiB),
    checksum: source.checksum,
    name: "big.bin",
    type: "application/x-test",
  });
  // Every later HEAD names the file.
  const head = await tusFetch(done.url, "HEAD", key);
  expect([head.status, head.headers.get("cubby-file-id"), head.headers.get("upload-offset")]).toEqual([200, file.id, String(256 * MiB)]);
  // The same file in one request does not pass the proxy.
  const plain = await fetch(`${nginx.url}/v1/files`, { method: "POST", body: Bun.file(source.path), headers: { authorization: `Bearer ${key}` } });
  expect(plain.status).toBe(413);
  await plain.arrayBuffer();
}, 120_000);

test("SIGKILL mid-upload: after a restart on the same data directory the client resumes from HEAD's offset", async () => {
  const port = await freePort();
  const dataDir = tempDir("cubby-tus-kill-");
  try {
    let victim = await startServer({ dataDir: dataDir.path, port });
    const owner = await victim.mintKey("resume@example.com");
    const source = randomFile(work.path, "resume.bin", 48 * MiB);
    let killed = false;
    const first = await tusUpload(source.path, {
      endpoint: `${victim.url}/v1/uploads`,
      token: owner,
      chunkSize: 4 * MiB,
      // After the first chunk's 204: the next PATCH dies with the server.
      onChunk: () => {
        if (!killed) {
          killed = true;
          victim.proc.kill("SIGKILL");
        }
      },
    }).then(
      () => "finished",
      (err: { uploadUrl?: string }) => err.uploadUrl,
    );
    expect(killed).toBe(true);
    expect(first).toStartWith(`${victim.url}/v1/uploads/`);
    await victim.kill9();
    victim = await startServer({ dataDir: dataDir.path, port });
    try {
      const offset = await headOffset(first!, owner);
      expect(typeof offset === "number" && offset >= 4 * MiB && offset < 48 * MiB).toBe(true);
      const resumed = await tusUpload(source.path, { uploadUrl: first!, token: owner, chunkSize: 4 * MiB });
      expect(resumed.accepted[0]).toBe((offset as number) + 4 * MiB);
      const file = (await (await client(victim, owner).fetch(`/v1/files/${resumed.fileId}`)).json()) as FileJson;
      expect({ size: file.size, checksum: file.checksum }).toEqual({ size: String(48 * MiB), checksum: source.checksum });
    } finally {
      await victim.kill9();
    }
  } finally {
    dataDir[Symbol.dispose]();
  }
}, 120_000);

test("a wrong Upload-Offset gets 409 and a checksum mismatch 460, both leaving the offset as it was", async () => {
  const url = await createUpload(server.url, key, 11);
  expect((await patchChunk(url, key, 0, "hello")).status).toBe(204);
  const conflict = await patchChunk(url, key, 3, "lo world");
  expect({ status: conflict.status, body: await conflict.json() }).toMatchObject({ status: 409, body: { code: 10, details: [] } });
  const bad = await patchChunk(url, key, 5, " world", { "upload-checksum": "crc32c AAAAAA==" });
  expect({ status: bad.status, body: await bad.json(), resumable: bad.headers.get("tus-resumable") }).toMatchObject({ status: 460, body: { code: 3 }, resumable: "1.0.0" });
  expect(await headOffset(url, key)).toBe(5);
  const sha1 = new Bun.CryptoHasher("sha1").update(" world").digest("base64");
  const ok = await patchChunk(url, key, 5, " world", { "upload-checksum": `sha1 ${sha1}` });
  expect(ok.status).toBe(204);
  const file = await fileOf(server, ok.headers.get("cubby-file-id")!);
  expect(file.checksum).toBe(checksumOf("hello world"));
  expect(await (await client(server, key).fetch(`/${file.id}`)).text()).toBe("hello world");
});

// On disk the CRC32C is carried chunk by chunk in the upload's row, so the finished upload is not
// read back to checksum it; a row without one (made before the column) is checksummed from its bytes.
test("the row carries the CRC32C of the bytes before the offset; an upload whose row has none still gets the right checksum", async () => {
  const url = await createUpload(server.url, key, 11);
  const id = url.split("/").pop()!;
  expect((await patchChunk(url, key, 0, "hello")).status).toBe(204);
  const [carried] = await runSql<{ crc32c: number | null }>(server.dataDir, "SELECT crc32c FROM uploads WHERE id = ?", id);
  // S3 checksums while it copies the chunks into the blob, so it carries none.
  const want = BACKEND === "sqlite-disk" ? Buffer.from(checksumOf("hello"), "base64").readUInt32BE() : null;
  expect(carried!.crc32c === null ? null : carried!.crc32c >>> 0).toBe(want);
  const last = await patchChunk(url, key, 5, " world");
  expect((await fileOf(server, last.headers.get("cubby-file-id")!)).checksum).toBe(checksumOf("hello world"));

  const unknown = await createUpload(server.url, key, 11);
  expect((await patchChunk(unknown, key, 0, "hello")).status).toBe(204);
  await runSql(server.dataDir, "UPDATE uploads SET crc32c = NULL WHERE id = ?", unknown.split("/").pop()!);
  const end = await patchChunk(unknown, key, 5, " world");
  expect((await fileOf(server, end.headers.get("cubby-file-id")!)).checksum).toBe(checksumOf("hello world"));
});

test("crc32c checksums pass; creation-with-upload; a request without Tus-Resumable gets 412 with Tus-Version", async () => {
  const created = await tusFetch(`${server.url}/v1/uploads`, "POST", key, { "upload-length": "10", "content-type": "application/offset+octet-stream", "upload-checksum": `crc32c ${checksumOf("01234")}` }, "01234");
  expect([created.status, created.headers.get("upload-offset")]).toEqual([201, "5"]);
  const url = created.headers.get("location")!;
  const missing = await fetch(url, { method: "PATCH", headers: { authorization: `Bearer ${key}`, "content-type": "application/offset+octet-stream", "upload-offset": "5" }, body: "56789" });
  expect({ status: missing.status, version: missing.headers.get("tus-version"), code: ((await missing.json()) as { code: number }).code }).toEqual({ status: 412, version: "1.0.0", code: 9 });
  const wrong = await tusFetch(url, "HEAD", key, { "tus-resumable": "0.2.2" });
  expect(wrong.status).toBe(412);
  expect(await headOffset(url, key)).toBe(5);
  expect((await patchChunk(url, key, 5, "56789", { "upload-checksum": `crc32c ${checksumOf("56789")}` })).status).toBe(204);
});

test("termination removes the upload and its bytes; the URL answers 404 after", async () => {
  const before = await blobNames(server.dataDir);
  const url = await createUpload(server.url, key, 100);
  expect((await patchChunk(url, key, 0, "x".repeat(40))).status).toBe(204);
  expect((await blobNames(server.dataDir)).length).toBeGreaterThan(before.length);
  expect((await tusFetch(url, "DELETE", key)).status).toBe(204);
  expect(await headOffset(url, key)).toBe("status 404");
  expect((await patchChunk(url, key, 40, "y")).status).toBe(404);
  expect(await blobNames(server.dataDir)).toEqual(before);
});

test("a files.read key cannot start a tus upload; another user's upload is not found", async () => {
  const reader = await server.mintKey("reader@example.com", "--scope", "files.read");
  const refused = await tusFetch(`${server.url}/v1/uploads`, "POST", reader, { "upload-length": "5" });
  expect({ status: refused.status, body: await refused.json() }).toEqual({ status: 403, body: { code: 7, message: "this key lacks files.write", details: [] } });
  const url = await createUpload(server.url, key, 5);
  const other = await server.mintKey("other@example.com");
  expect(await headOffset(url, other)).toBe("status 404");
  expect((await tusFetch(url, "HEAD", undefined)).status).toBe(401);
});

test("an unfinished upload expires: the sweep removes its row and bytes, and its URL answers 404", async () => {
  await using short = await startServer({ env: { TUS_UPLOAD_EXPIRY_SECONDS: "2" } });
  const owner = await short.mintKey("expiry@example.com");
  const before = await blobNames(short.dataDir);
  const url = await createUpload(short.url, owner, 100);
  const id = url.split("/").pop()!;
  const patched = await patchChunk(url, owner, 0, "partial bytes");
  expect(patched.status).toBe(204);
  expect(Date.parse(patched.headers.get("upload-expires")!)).toBeLessThanOrEqual(Date.now() + 3000);
  expect((await blobNames(short.dataDir)).length).toBeGreaterThan(before.length);
  let seen = "";
  const swept = async () => {
    const [rows, blobs] = [await runSql(short.dataDir, "SELECT id FROM uploads WHERE id = ?", id), await blobNames(short.dataDir)];
    seen = `${rows.length} row(s), blobs ${blobs}`;
    return rows.length === 0 && JSON.stringify(blobs) === JSON.stringify(before);
  };
  await waitFor(swept, "the sweep to remove the upload's row and bytes", { timeoutMs: 20_000, pollMs: 100, detail: () => `not swept: ${seen}` });
  expect(await headOffset(url, owner)).toBe("status 404");
}, 40_000);
