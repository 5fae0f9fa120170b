/**
 * REST routes for folders under /v1/folders (CONTRACT §12): create, list, read, rename or move,
 * delete (recursive on request), and which files a folder holds (PUT moves a file in, DELETE takes
 * it out to the top, GET lists them). Each route declares its path, query and JSON body
 * (http/inputs.ts); the folder service decides (service/folders.ts), and rows become the Folder
 * object (domain/folder.ts) or the File objects of the spec, unchanged.
 *
 * `root` in place of a folder ID in `GET /v1/folders/root/files` lists the files at the top (in
 * no folder), as Google Drive names a user's top folder `root`; no folder ID has four characters.
 */
import { Elysia, t } from "elysia";
import { toFilePageJson } from "../domain/file-page.ts";
import { checkFolderName, MAX_FOLDER_NAME, parseFolderId, parseParentId, toFolderJson, toFolderPageJson, type FolderView } from "../domain/folder.ts";
import { isFileId } from "../domain/ids.ts";
import { DEFAULT_PAGE_SIZE } from "../domain/params.ts";
import { AppError } from "../errors.ts";
import type { Authenticator } from "../auth/principal.ts";
import type { FolderService } from "../service/folders.ts";
import { AUTH, detail, errors, FILE_ID, ok, type Operation, type Responses } from "./describe.ts";
import { checked, closedBody, fileListQuery, jsonBody, pagingQuery, queryParam, strictQuery } from "./inputs.ts";
import { NEWEST_FIRST, parseFileToken } from "../domain/file-order.ts";
import { PATTERNS } from "./openapi-schemas.ts";
import { authRequest, requestContext } from "./request-context.ts";
import { json } from "./respond.ts";

export interface FoldersRoutesDeps {
  folders: FolderService;
  auth: Authenticator;
  /** Public origin for folder and file URLs (HOSTNAME). */
  baseUrl: () => string;
}

/** Largest folder body read, in bytes: a name and an ID need far less. */
const MAX_BODY_BYTES = 64 * 1024;

/** The word that stands for the top in `GET /v1/folders/{id}/files`. */
export const TOP_FOLDER = "root";

const FOLDER_ID = { type: "string", pattern: PATTERNS.fileId };
const FOLDER_NAME = { type: "string", minLength: 1, maxLength: MAX_FOLDER_NAME, pattern: PATTERNS.folderName };
/** `parent_id` in a body: a folder ID, or "" or null for the top. */
const PARENT_ID = { type: ["string", "null"], pattern: `^$|${PATTERNS.fileId}` };

/** `{id}` of /v1/folders/{id}…: a folder ID (a malformed one answers 400). */
const folderIdParams = t.Object({ id: checked({ ...FOLDER_ID, description: "Folder ID (a malformed one answers 400)" }, (raw) => parseFolderId(raw as string)) });

/** `{id}` and `{file_id}` of /v1/folders/{id}/files/{file_id}. */
const membershipParams = t.Object({
  id: checked({ ...FOLDER_ID, description: "Folder ID" }, (raw) => parseFolderId(raw as string)),
  file_id: checked({ ...FILE_ID, description: "File ID" }, (raw) => {
    if (!isFileId(raw as string)) throw new AppError("invalid_argument", `file_id: "${String(raw).slice(0, 40)}" is not a file ID (21 characters of A-Z a-z 0-9 _ -)`);
    return raw as string;
  }),
});

/** `{id}` of /v1/folders/{id}/files: a folder ID, or `root` for the files in no folder. */
const filesOfParams = t.Object({
  id: checked({ type: "string", pattern: `^(?:${TOP_FOLDER}|${PATTERNS.fileId.slice(1, -1)})$`, description: `Folder ID, or \`${TOP_FOLDER}\`: the files in no folder` }, (raw) =>
    raw === TOP_FOLDER ? raw : parseFolderId(raw as string),
  ),
});

/** A JSON body field that is a folder name. */
const nameField = checked({ ...FOLDER_NAME, description: "Unique among the names of the parent's files and sub-folders" }, (raw) => {
  if (typeof raw !== "string") throw new AppError("invalid_argument", "name: must be a string");
  return checkFolderName(raw);
});

/** A JSON body field that says where a folder goes. */
const parentField = checked({ ...PARENT_ID, description: 'The folder it goes in; "" or null: the top' }, (raw) => {
  if (raw !== null && typeof raw !== "string") throw new AppError("invalid_argument", 'parent_id: must be a folder ID, "" or null');
  parseParentId(raw);
  return raw;
});

const createBody = jsonBody(closedBody({ name: nameField, parent_id: t.Optional(parentField) }, "`parent_id` absent, \"\" or null: at the top; unknown fields are refused"), {
  maxBytes: MAX_BODY_BYTES,
  what: "the folder",
});

const patchBody = jsonBody(
  closedBody({ name: t.Optional(nameField), parent_id: t.Optional(parentField) }, 'Absent fields are unchanged; `parent_id` "" or null moves it to the top'),
  { maxBytes: MAX_BODY_BYTES, what: "the changes" },
);

const listQuery = strictQuery({
  parent_id: queryParam({ pattern: `^$|${PATTERNS.fileId}`, description: 'The folder whose sub-folders to list; absent or "": the top' }, (raw) => {
    parseParentId(raw);
    return raw;
  }),
  ...pagingQuery,
});

const deleteQuery = strictQuery({
  recursive: queryParam({ enum: ["", "true", "false"], default: "false", description: "`true`: delete what it holds too (files, sub-folders); else a non-empty folder answers 412" }, (raw) => {
    if (raw !== "" && raw !== "true" && raw !== "false") throw new AppError("invalid_argument", `recursive: "true" or "false" (got "${raw.slice(0, 40)}")`);
    return raw;
  }),
});

/** A folder operation: authenticated, owner-only (another user's folder is 404, CONTRACT §12). */
function folderOp(operationId: string, summary: string, responses: Responses, extra: Partial<Operation> = {}) {
  return detail({ operationId, summary, tags: ["folders"], ...extra, responses: { ...responses, ...errors(400, 404, ...AUTH) } });
}

/** The /v1/folders routes as an Elysia plugin. */
export function foldersRoutes(deps: FoldersRoutesDeps) {
  const { folders, auth } = deps;
  const folderJson = (f: FolderView) => toFolderJson(deps.baseUrl(), f);

  return new Elysia({ name: "folders-routes", prefix: "/v1/folders" })
    .use(requestContext)
    .derive(async ({ request, requestContext }) => ({ principal: await auth.require(authRequest(request, requestContext)) }))
    .post("", async ({ principal, body }) => json(folderJson(await folders.create(principal, { name: body.name, parentId: parseParentId(body.parent_id ?? null) }))), {
      ...createBody,
      detail: detail({
        operationId: "createFolder",
        summary: "Create a folder, at the top or in one of the caller's folders",
        tags: ["folders"],
        requestBody: { required: true },
        responses: { ...ok("Folder", "The new folder"), ...errors(400, 404, 409, 415, ...AUTH) },
      }),
    })
    .get(
      "",
      async ({ principal, query }) => {
        const page = await folders.list(principal, parseParentId(query.parent_id ?? null), query.page_size ?? DEFAULT_PAGE_SIZE, query.page_token);
        return json(toFolderPageJson(deps.baseUrl(), page));
      },
      {
        ...listQuery,
        detail: folderOp("listFolders", "The caller's folders in one folder (or at the top), newest first", ok("FolderPage")),
      },
    )
    .get("/:id", async ({ principal, params }) => json(folderJson(await folders.get(principal, params.id))), {
      params: folderIdParams,
      parse: "none",
      detail: folderOp("getFolder", "A folder, with the count and bytes of the files directly in it", ok("Folder")),
    })
    .patch(
      "/:id",
      async ({ principal, params, body }) => {
        const patch = { name: body.name, parentId: body.parent_id === undefined ? undefined : parseParentId(body.parent_id) };
        return json(folderJson(await folders.update(principal, params.id, patch)));
      },
      {
        params: folderIdParams,
        ...patchBody,
        detail: folderOp("updateFolder", "Rename a folder or move it (not into itself or below itself)", { ...ok("Folder"), ...errors(409, 415) }, {
          requestBody: { required: true },
        }),
      },
    )
    .delete(
      "/:id",
      async ({ principal, params, query }) => {
        await folders.delete(principal, params.id, { recursive: query.recursive === "true" });
        return json({});
      },
      {
        params: folderIdParams,
        ...deleteQuery,
        detail: folderOp("deleteFolder", "Delete a folder; with recursive=true also its files and sub-folders", { ...ok("Empty"), ...errors(412) }),
      },
    )
    .get(
      "/:id/files",
      async ({ principal, params, query }) => {
        const order = query.order_by ?? NEWEST_FIRST;
        const page = await folders.listFiles(principal, params.id === TOP_FOLDER ? null : params.id, query.page_size ?? DEFAULT_PAGE_SIZE, parseFileToken(query.page_token ?? "", order), order);
        return json(toFilePageJson(deps.baseUrl(), page, order));
      },
      {
        params: filesOfParams,
        ...strictQuery(fileListQuery),
        detail: folderOp("listFolderFiles", "The files directly in a folder (`root`: in no folder), newest first or in the order asked (order_by)", ok("FilePage")),
      },
    )
    .put(
      "/:id/files/:file_id",
      async ({ principal, params }) => {
        await folders.moveFile(principal, params.id, params.file_id);
        return json({});
      },
      {
        params: membershipParams,
        parse: "none",
        detail: folderOp("moveFileToFolder", "Move one of the caller's files into a folder (out of any other)", { ...ok("Empty"), ...errors(409) }),
      },
    )
    .delete(
      "/:id/files/:file_id",
      async ({ principal, params }) => {
        await folders.removeFile(principal, params.id, params.file_id);
        return json({});
      },
      {
        params: membershipParams,
        parse: "none",
        detail: folderOp("removeFileFromFolder", "Take a file out of a folder, to the top (the file stays)", ok("Empty")),
      },
    );
}
