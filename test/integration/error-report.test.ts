// test-lists: postgres-s3
// Where an internal error is logged (docs/design.md): once, by context/report.ts, with the
// request's method, path and ID, whichever surface failed; the client sees only its status.
import { expect, test } from "bun:test";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import fs from "node:fs";
import path from "node:path";
import { FileService } from "../../src/gen/cubby/v1/files_pb.ts";
import { BACKEND } from "../support/backend.ts";
import { freePort, IDP_CLIENT } from "../support/idp.ts";
import { client, startServer, type RunningServer } from "../support/server.ts";

/** The stderr lines that report an error of the request with ID `id`. */
const reportsOf = (server: RunningServer, id: string) => server.errors().split("\n").filter((l) => l.includes(`request_id=${id} error=`));

// The faults are made on the disk: a blob becomes a directory, the upload directory a file.
test.skipIf(BACKEND !== "sqlite-disk")("REST, RPC and content URLs report an internal error once, with method, path and request id", async () => {
  await using broken = await startServer();
  const key = await broken.mintKey("broken@example.com");
  const file = await client(broken, key).upload("hello", "?visibility=public");
  // Reading the file fails (its blob is now a directory), and so does every upload (ENOTDIR).
  const blobs = path.join(broken.dataDir, "blobs");
  const [blob] = fs.readdirSync(blobs);
  fs.rmSync(path.join(blobs, blob!));
  fs.mkdirSync(path.join(blobs, blob!));
  const tmp = path.join(broken.dataDir, "tmp");
  fs.rmSync(tmp, { recursive: true });
  fs.writeFileSync(tmp, "not a directory");

  const rest = await fetch(`${broken.url}/v1/files`, { method: "POST", body: "x", headers: { authorization: `Bearer ${key}`, "x-request-id": "rest-1" } });
  const rpc = createClient(FileService, createConnectTransport({ baseUrl: broken.url, httpVersion: "1.1" }));
  const rpcError = await rpc
    .createFile((async function* () {})(), { headers: { authorization: `Bearer ${key}`, "x-request-id": "rpc-1" } })
    .then(() => undefined, (e: unknown) => (e as Error).message);
  // The content fails after its headers went out: a reset. curl, because fetch retries a reset GET.
  await Bun.spawn(["curl", "-s", "-o", "/dev/null", "-H", "x-request-id: content-1", `${broken.url}/${file.id}`]).exited;

  expect({ rest: rest.status, rpc: rpcError }).toEqual({ rest: 500, rpc: "[internal] internal error" });
  for (const id of ["rest-1", "rpc-1", "content-1"]) await broken.waitForErrors(`request_id=${id} error=`);
  expect({
    rest: reportsOf(broken, "rest-1").map((l) => /^method=POST path="\/v1\/files" request_id=rest-1 error=internal cause=.*ENOTDIR/.test(l)),
    rpc: reportsOf(broken, "rpc-1").map((l) => /^method=POST path="\/cubby\.v1\.FileService\/CreateFile" request_id=rpc-1 error=internal cause=.*ENOTDIR/.test(l)),
    content: reportsOf(broken, "content-1").map((l) => new RegExp(`^method=GET path="/${file.id}" request_id=content-1 error=internal cause=.*EISDIR`).test(l)),
  }).toEqual({ rest: [true], rpc: [true], content: [true] });
});

test("a provider that cannot be reached: a 503 page, its cause reported with the request id", async () => {
  const closed = await freePort();
  await using server = await startServer({ env: { IDP_ISSUER: `http://127.0.0.1:${closed}`, ...IDP_CLIENT } });
  const res = await fetch(`${server.url}/auth/login`, { headers: { "x-request-id": "login-1" } });
  const page = await res.text();
  expect({ status: res.status, type: res.headers.get("content-type"), says: page.includes("could not be reached") }).toEqual({
    status: 503,
    type: "text/html; charset=utf-8",
    says: true,
  });
  await server.waitForErrors("request_id=login-1 error=");
  expect(reportsOf(server, "login-1").map((l) => /^method=GET path="\/auth\/login" request_id=login-1 error=unavailable cause=/.test(l))).toEqual([true]);
});
