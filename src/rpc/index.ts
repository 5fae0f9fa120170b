/**
 * The RPC surface: FileService, FolderService (CONTRACT §12) and server reflection on one Connect router, with the options
 * of CONTRACT §4, as routes for connect-node (gRPC, gRPC-Web and Connect on HTTP/1.1 and h2c).
 */
import type { ConnectRouter, ConnectRouterOptions } from "@connectrpc/connect";
import { createConnectRouter } from "@connectrpc/connect";
import { file_cubby_v1_files, FileService } from "../gen/cubby/v1/files_pb.ts";
import { file_cubby_v1_folders, FolderService } from "../gen/cubby/v1/folders_pb.ts";
import { fileServiceImpl, type FileRpcDeps, type FileUnaryMethods } from "./file-service.ts";
import { folderServiceImpl, type FolderRpcDeps } from "./folder-service.ts";
import { registerReflection } from "./reflection.ts";

/** Messages up to 4 MiB either way (CONTRACT §4). */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/** Router options shared by both paths. JSON uses proto field names and emits implicit fields, like REST. */
export const RPC_OPTIONS: ConnectRouterOptions = {
  readMaxBytes: MAX_MESSAGE_BYTES,
  writeMaxBytes: MAX_MESSAGE_BYTES,
  jsonOptions: { alwaysEmitImplicit: true, useProtoFieldName: true, ignoreUnknownFields: false },
};

/**
 * Registers every RPC service on a router.
 * @param unary FileService's unary methods, when the unary fast path calls the same ones
 */
export function rpcRoutes(deps: FileRpcDeps & FolderRpcDeps, unary?: FileUnaryMethods): (router: ConnectRouter) => void {
  return (router) => {
    router.service(FileService, fileServiceImpl(deps, unary));
    router.service(FolderService, folderServiceImpl(deps));
    registerReflection(router, [file_cubby_v1_files, file_cubby_v1_folders]);
  };
}

/** Every RPC request path (e.g. `/cubby.v1.FileService/GetFile`) the routes serve. */
export function rpcPaths(routes: (router: ConnectRouter) => void): Set<string> {
  const router = createConnectRouter(RPC_OPTIONS);
  routes(router);
  return new Set(router.handlers.map((h) => h.requestPath));
}
