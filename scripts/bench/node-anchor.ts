// The RPC anchor: cubby's proto served by @connectrpc/connect-node on plain Node.js, with a
// GetFile that answers a constant File (no database, no auth): the protocol stack alone.
// Bundled for Node by scripts/bench/index.ts; prints "h1=<port> h2=<port>".
import { create } from "@bufbuild/protobuf";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import http from "node:http";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { FileSchema, FileService } from "../../src/gen/cubby/v1/files_pb.ts";

const file = create(FileSchema, {
  id: "V1StGXR8_Z5jdHi6B-myT",
  url: "http://localhost/V1StGXR8_Z5jdHi6B-myT",
  name: "bench.bin",
  contentType: "application/octet-stream",
  size: 4096n,
  checksum: "AAAAAA==",
  visibility: "public",
  createdAt: { seconds: 1700000000n, nanos: 0 },
  updatedAt: { seconds: 1700000000n, nanos: 0 },
});
const handler = connectNodeAdapter({
  routes: (router) => router.service(FileService, { getFile: () => ({ file }) }),
});
const h1 = http.createServer(handler).listen(0, "127.0.0.1");
const h2 = http2.createServer(handler).listen(0, "127.0.0.1");
await Promise.all([new Promise((r) => h1.once("listening", r)), new Promise((r) => h2.once("listening", r))]);
console.log(`h1=${(h1.address() as AddressInfo).port} h2=${(h2.address() as AddressInfo).port}`);
