/**
 * `cubby.v1.FolderService` (CONTRACT §12): translates proto messages to domain values, calls the
 * same folder service as REST (service/folders.ts), and translates back; errors leave through
 * rpc/errors.ts's table (already_exists → ALREADY_EXISTS, …). Nothing here decides anything.
 * Every call goes through connect-node (the unary fast path of rpc/unary.ts is FileService's).
 */
import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Authenticator } from "../auth/principal.ts";
import { checkFolderName, parseFolderId, parseParentId, type FolderView } from "../domain/folder.ts";
import { encodePageToken, parseFileId, parsePageToken, parseRpcPageSize } from "../domain/params.ts";
import type { FolderService as Folders } from "../service/folders.ts";
import { FolderSchema, FolderService, type Folder } from "../gen/cubby/v1/folders_pb.ts";
import { rpcErrors } from "./errors.ts";
import { authenticate, callerOf, fileMessage, timestamp } from "./file-service.ts";

export interface FolderRpcDeps {
  folders: Folders;
  auth: Authenticator;
  /** Public origin for folder and file URLs (HOSTNAME). */
  baseUrl: () => string;
}

/** A Folder message for a folder; its proto3 JSON equals the REST Folder object. */
export function folderMessage(baseUrl: string, f: FolderView): Folder {
  return create(FolderSchema, {
    id: f.id,
    name: f.name,
    parentId: f.parentId ?? "",
    url: `${baseUrl}/?folder=${f.id}`,
    fileCount: f.fileCount,
    bytes: BigInt(f.bytes),
    createdAt: timestamp(f.createdAt),
    updatedAt: timestamp(f.updatedAt),
  });
}

/** The FolderService implementation for connect-node. */
export function folderServiceImpl(deps: FolderRpcDeps): ServiceImpl<typeof FolderService> {
  const { folders, auth } = deps;
  const principal = (ctx: HandlerContext) => authenticate(auth, callerOf(ctx));
  const toProto = (f: FolderView) => folderMessage(deps.baseUrl(), f);

  return rpcErrors({
    async createFolder(req, ctx) {
      const who = await principal(ctx);
      return { folder: toProto(await folders.create(who, { name: req.name, parentId: parseParentId(req.parentId) })) };
    },

    async getFolder(req, ctx) {
      const who = await principal(ctx);
      return { folder: toProto(await folders.get(who, parseFolderId(req.id))) };
    },

    async listFolders(req, ctx) {
      const who = await principal(ctx);
      const page = await folders.list(who, parseParentId(req.parentId), parseRpcPageSize(req.pageSize), parsePageToken(req.pageToken));
      return { folders: page.folders.map(toProto), nextPageToken: page.next === undefined ? "" : encodePageToken(page.next) };
    },

    async updateFolder(req, ctx) {
      const who = await principal(ctx);
      const patch = {
        name: req.name === undefined ? undefined : checkFolderName(req.name),
        parentId: req.parentId === undefined ? undefined : parseParentId(req.parentId),
      };
      return { folder: toProto(await folders.update(who, parseFolderId(req.id), patch)) };
    },

    async deleteFolder(req, ctx) {
      const who = await principal(ctx);
      await folders.delete(who, parseFolderId(req.id), { recursive: req.recursive });
      return {};
    },

    async moveFile(req, ctx) {
      const who = await principal(ctx);
      await folders.moveFile(who, parseParentId(req.folderId, "folder_id"), parseFileId(req.fileId));
      return {};
    },

    async removeFile(req, ctx) {
      const who = await principal(ctx);
      await folders.removeFile(who, parseFolderId(req.folderId, "folder_id"), parseFileId(req.fileId));
      return {};
    },

    async listFolderFiles(req, ctx) {
      const who = await principal(ctx);
      const page = await folders.listFiles(who, parseParentId(req.folderId, "folder_id"), parseRpcPageSize(req.pageSize), parsePageToken(req.pageToken));
      return { files: page.files.map((f) => fileMessage(deps.baseUrl(), f)), nextPageToken: page.next === undefined ? "" : encodePageToken(page.next) };
    },
  });
}
