/**
 * The RPC surface: FileService and server reflection on one Connect router, with the options
 * of CONTRACT §4, as routes for node:http2 (gRPC, gRPC-Web, Connect over h2c) and as fetch
 * handlers for HTTP/1.1 (Connect and gRPC-Web).
 */
import type { ConnectRouter, ConnectRouterOptions } from "@connectrpc/connect";
import { createConnectRouter } from "@connectrpc/connect";
import { createFetchHandler } from "@connectrpc/connect/protocol";
import { file_cubby_v1_files, FileService } from "../gen/cubby/v1/files_pb.ts";
import { fileServiceImpl, type FileRpcDeps } from "./file-service.ts";
import { registerReflection } from "./reflection.ts";

/** Messages up to 4 MiB either way (CONTRACT §4). */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/** Router options shared by both paths. JSON uses proto field names and emits implicit fields, like REST. */
export const RPC_OPTIONS: ConnectRouterOptions = {
  readMaxBytes: MAX_MESSAGE_BYTES,
  writeMaxBytes: MAX_MESSAGE_BYTES,
  jsonOptions: { alwaysEmitImplicit: true, useProtoFieldName: true, ignoreUnknownFields: false },
};

/** Registers every RPC service on a router. */
export function rpcRoutes(deps: FileRpcDeps): (router: ConnectRouter) => void {
  return (router) => {
    router.service(FileService, fileServiceImpl(deps));
    registerReflection(router, [file_cubby_v1_files]);
  };
}

/** Request path (e.g. `/cubby.v1.FileService/GetFile`) → fetch handler, for the HTTP/1.1 path. */
export function rpcFetchHandlers(routes: (router: ConnectRouter) => void): Map<string, (request: Request) => Promise<Response>> {
  const router = createConnectRouter(RPC_OPTIONS);
  routes(router);
  return new Map(router.handlers.map((h) => [h.requestPath, createFetchHandler(h)]));
}
