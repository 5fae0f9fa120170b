// The REST anchor: cubby's own HTTP app (the same request handler as `cubby serve`) on a bare
// Bun.serve, without the one-port listener in front. Prints "listening on port N".
// Usage: bun scripts/bench/bare-server.ts DATA_DIR
import { Authenticator } from "../../src/auth/principal.ts";
import { WindowLimiter } from "../../src/auth/rate-limit.ts";
import { createApp } from "../../src/http/app.ts";
import { rpcFetchHandlers, rpcRoutes } from "../../src/rpc/index.ts";
import { createRequestHandler } from "../../src/server/request-handler.ts";
import { openServices } from "../../src/service/index.ts";

const dataDir = process.argv[2]!;
const services = openServices({ dataDir, maxUploadBytes: 1 << 30 });
let baseUrl = "";
const auth = new Authenticator(services.keys, services.sessions, () => baseUrl);
const app = createApp({ services, auth, signIn: undefined, signInLimiter: new WindowLimiter(0), baseUrl: () => baseUrl, maxUploadBytes: 1 << 30 });
const rpc = rpcFetchHandlers(rpcRoutes({ files: services.files, blobs: services.blobs, auth, baseUrl: () => baseUrl }));
// Same access log as `cubby serve`, so both sides pay for it.
const handle = createRequestHandler({ app: (r) => app.handle(r), rpc, log: (line) => process.stdout.write(`${line}\n`), trustedProxies: new Set() });
const server = Bun.serve({
  port: 0,
  maxRequestBodySize: Number.MAX_SAFE_INTEGER,
  fetch: (request, srv) => handle(request, srv.requestIP(request)?.address ?? "unknown"),
});
baseUrl = `http://localhost:${server.port}`;
console.log(`listening on port ${server.port}`);
