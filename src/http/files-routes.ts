/**
 * REST routes for files under /v1 (CONTRACT §2): each route declares its path, query and JSON
 * body (http/inputs.ts), which Elysia validates after the caller is authenticated; the service
 * decides, and records become the spec's File JSON. Raw uploads stream from the request body.
 */
import { Elysia, t } from "elysia";
import { AppError } from "../errors.ts";
import { formatExpiry } from "../domain/expiry.ts";
import { toFileJson, VISIBILITIES, type FileRecord, type Visibility } from "../domain/file.ts";
import { toFilePageJson } from "../domain/file-page.ts";
import { parseFolderId } from "../domain/folder.ts";
import { parseDeclaredChecksum } from "../domain/checksum.ts";
import {
  DEFAULT_PAGE_SIZE,
  MAX_NAME_QUERY,
  parseFileIds,
  parseMediaType,
  parseName,
  parseNameQuery,
  parseSlug,
  parseVisibility,
  uploadMediaType,
} from "../domain/params.ts";
import type { Authenticator } from "../auth/principal.ts";
import type { Principal } from "../domain/principal.ts";
import type { FileService } from "../service/files.ts";
import { MAX_SENT_THUMBNAIL_BYTES, type ThumbnailService } from "../service/thumbnails.ts";
import { thumbnailReply } from "../serving/thumbnail-reply.ts";
import { AUTH, checksums, detail, errors, ok, rawContent, type Operation, type Responses } from "./describe.ts";
import { bodyString, closedBody, expiryFields, fileIdParams, fileListQuery, jsonBody, keepTtl, queryParam, queryParsed, strictQuery, TTL } from "./inputs.ts";
import { NEWEST_FIRST, parseFileToken } from "../domain/file-order.ts";
import { PATTERNS } from "./openapi-schemas.ts";
import { authRequest, requestContext } from "./request-context.ts";
import { json } from "./respond.ts";
import { readBoundedBytes } from "./json-body.ts";

export interface FilesRoutesDeps {
  files: FileService;
  thumbnails: ThumbnailService;
  auth: Authenticator;
  /** Public origin for file URLs (HOSTNAME). */
  baseUrl: () => string;
  maxUploadBytes: number;
}

/** Largest PATCH body read, in bytes: three short strings need far less. */
const MAX_PATCH_BYTES = 64 * 1024;

// "." and ".." are refused too: no URL can keep them as a segment.
const SLUG = { maxLength: 128, pattern: "^(?!\\.\\.?$)[A-Za-z0-9._~-]*$" };
const NAME = { maxLength: 255, pattern: PATTERNS.name };

const createQuery = strictQuery({
  slug: queryParam({ ...SLUG, description: "Last segment of the canonical URL" }, parseSlug),
  name: queryParam({ ...NAME, description: "Original file name" }, parseName),
  visibility: queryParsed({ enum: ["", ...VISIBILITIES], default: "internal", description: "Who can open the file by its URL" }, optionalVisibility),
  expire_time: queryParam({ format: "date-time", description: "Delete the file at this time (RFC 3339)" }, (raw) => raw),
  ttl: queryParam({ ...TTL, description: "Delete the file after this long: `90s`, `15m`, `12h`, `7d`; at most ten years" }, keepTtl),
  folder_id: queryParam({ pattern: `^$|${PATTERNS.fileId}`, description: 'One of the caller\'s folders to put the file in (its name must be free there, else 409); absent or "": at the top' }, (raw) =>
    raw === "" ? raw : parseFolderId(raw, "folder_id"),
  ),
});

const listQuery = strictQuery({
  q: queryParam({ maxLength: MAX_NAME_QUERY, description: "Only files whose name contains this text" }, parseNameQuery),
  ...fileListQuery,
});

const patchBody = jsonBody(
  closedBody(
    {
      slug: t.Optional(bodyString("slug", { ...SLUG, description: '"" clears' }, parseSlug)),
      name: t.Optional(bodyString("name", { ...NAME, description: '"" clears' }, parseName)),
      visibility: t.Optional(bodyString("visibility", { enum: [...VISIBILITIES] }, parseVisibility)),
    },
    "Absent fields are unchanged; unknown fields are refused",
  ),
  { maxBytes: MAX_PATCH_BYTES, what: "the changes" },
);

const expiryBody = jsonBody(closedBody(expiryFields, '`expire_time` or `ttl`; `{"expire_time": ""}` clears'), {
  maxBytes: MAX_PATCH_BYTES,
  what: "the expiry",
});

/** A file operation on /v1/files/{id}…: authenticated, owner-only changes (CONTRACT §2). */
function fileOp(operationId: string, summary: string, responses: Responses, extra: Partial<Operation> = {}) {
  return detail({ operationId, summary, tags: ["files"], ...extra, responses: { ...responses, ...errors(400, 404, ...AUTH) } });
}

/** The most files one `GET /v1/thumbnails` or `GET /v1/expiries` asks about: two dashboard pages. */
export const MAX_FILE_IDS_QUERY = 100;

const FILE_ID = PATTERNS.fileId.slice(1, -1);
const fileIdsQuery = strictQuery({
  file_ids: queryParsed({ pattern: `^${FILE_ID}(,${FILE_ID}){0,${MAX_FILE_IDS_QUERY - 1}}$`, description: `File IDs, comma-separated, at most ${MAX_FILE_IDS_QUERY}` }, (raw) =>
    parseFileIds(raw, "file_ids", MAX_FILE_IDS_QUERY),
  ),
});

/**
 * The files of `ids` the caller may see, in the order asked; those that do not exist or that the
 * caller cannot see are left out (a list asked about in one request must not fail for one).
 * At most {@link MAX_FILE_IDS_QUERY} lookups, each one indexed row.
 */
async function visibleFiles(files: FileService, principal: Principal, ids: readonly string[]) {
  const seen = await Promise.all(ids.map((id) => files.get(principal, id).catch((err: unknown) => (err instanceof AppError && err.code === "not_found" ? undefined : Promise.reject(err)))));
  return seen.filter((f) => f !== undefined);
}

/**
 * A route `GET {prefix}?file_ids=a,b,…` answering `answer(visible)` about the files the caller
 * may see ({@link visibleFiles}): what a list needs beside each File object, for a page in one
 * request. 401 without credentials, 400 for a bad `file_ids`.
 */
function perFileRoute(
  prefix: string,
  deps: Pick<FilesRoutesDeps, "files" | "auth">,
  answer: (visible: FileRecord[]) => Promise<unknown> | unknown,
  operation: { operationId: string; summary: string; schema: string },
) {
  return new Elysia({ name: `${prefix}-routes`, prefix })
    .use(requestContext)
    .derive(async ({ request, requestContext }) => ({ principal: await deps.auth.require(authRequest(request, requestContext)) }))
    .get("", async ({ principal, query }) => json(await answer(await visibleFiles(deps.files, principal, query.file_ids ?? []))), {
      ...fileIdsQuery,
      detail: detail({ operationId: operation.operationId, summary: operation.summary, tags: ["files"], responses: { ...ok(operation.schema), ...errors(400, ...AUTH) } }),
    });
}

/**
 * `GET /v1/thumbnails?file_ids=a,b,…` (CONTRACT §15): which of the files have a thumbnail to
 * show, in one request for a page of a list (the dashboard asks it instead of loading an image
 * that would answer 404). Files the caller cannot see are left out, as are those without one.
 */
export function thumbnailsRoutes(deps: Pick<FilesRoutesDeps, "files" | "thumbnails" | "auth">) {
  return perFileRoute(
    "/v1/thumbnails",
    deps,
    async (visible) => {
      const have = await deps.thumbnails.available(visible);
      return { file_ids: visible.filter((f) => have.has(f.id)).map((f) => f.id) };
    },
    { operationId: "listThumbnails", summary: "Which of these files have a thumbnail (one request for a page of a list)", schema: "ThumbnailList" },
  );
}

/**
 * `GET /v1/expiries?file_ids=a,b,…`: when each of the files deletes itself, in one request for a
 * page of a list (the File object has no expiry; it lives beside it, `GET /v1/files/{id}/expiry`,
 * and a list asking that once per row made N + 1 requests, issue 40). `expire_time` is "" for
 * never; files the caller cannot see are left out.
 */
export function expiriesRoutes(deps: Pick<FilesRoutesDeps, "files" | "auth">) {
  return perFileRoute("/v1/expiries", deps, (visible) => ({ expiries: visible.map((f) => ({ file_id: f.id, expire_time: formatExpiry(f.expiresAt) })) }), {
    operationId: "listExpiries",
    summary: "When each of these files deletes itself (one request for a page of a list)",
    schema: "ExpiryList",
  });
}

/** The /v1 file routes as an Elysia plugin. */
export function filesRoutes(deps: FilesRoutesDeps) {
  const { files, auth } = deps;
  const fileJson = (record: Parameters<typeof toFileJson>[1]) => toFileJson(deps.baseUrl(), record);

  return new Elysia({ name: "files-routes", prefix: "/v1/files" })
    .use(requestContext)
    .derive(async ({ request, requestContext }) => ({ principal: await auth.require(authRequest(request, requestContext)) }))
    .post(
      "",
      async ({ request, principal, query }) => {
        const input = {
          slug: query.slug ?? "",
          name: query.name ?? "",
          visibility: query.visibility,
          expiresAt: files.expiryFrom({ expire_time: query.expire_time, ttl: query.ttl }),
          ...uploadHeaders(request, deps.maxUploadBytes, query.name ?? ""),
          content: request.body,
          folderId: query.folder_id === undefined || query.folder_id === "" ? undefined : query.folder_id,
        };
        return json(fileJson(await files.create(principal, input)));
      },
      {
        ...createQuery,
        detail: detail({
          operationId: "createFile",
          summary: "Upload a file",
          tags: ["files"],
          parameters: checksums,
          requestBody: rawContent,
          responses: { ...ok("File", "The new file"), ...errors(400, 404, 409, 413, ...AUTH) },
        }),
      },
    )
    .get(
      "",
      async ({ principal, query }) => {
        const order = query.order_by ?? NEWEST_FIRST;
        const page = await files.list(principal, query.page_size ?? DEFAULT_PAGE_SIZE, parseFileToken(query.page_token ?? "", order), query.q ?? "", order);
        return json(toFilePageJson(deps.baseUrl(), page, order));
      },
      {
        ...listQuery,
        detail: detail({
          operationId: "listFiles",
          summary: "List the caller's files, newest first or in the order asked (order_by)",
          tags: ["files"],
          responses: { ...ok("FilePage"), ...errors(400, ...AUTH) },
        }),
      },
    )
    .get("/:id", async ({ principal, params }) => json(fileJson(await files.get(principal, params.id))), {
      params: fileIdParams,
      parse: "none",
      detail: fileOp("getFile", "A file's metadata", ok("File")),
    })
    .put(
      "/:id/content",
      async ({ request, principal, params }) => {
        const input = { ...uploadHeaders(request, deps.maxUploadBytes, undefined), content: request.body };
        return json(fileJson(await files.replaceContent(principal, params.id, input)));
      },
      {
        params: fileIdParams,
        parse: "none",
        detail: fileOp("replaceFileContent", "Replace the content; ID and URL stay", { ...ok("File"), ...errors(413) }, { parameters: checksums, requestBody: rawContent }),
      },
    )
    .patch("/:id", async ({ principal, params, body }) => json(fileJson(await files.update(principal, params.id, body))), {
      params: fileIdParams,
      ...patchBody,
      detail: fileOp("updateFile", "Set or clear slug, name, visibility", { ...ok("File", "The file; its `url` is the new canonical URL"), ...errors(409, 415) }, {
        requestBody: { required: true },
      }),
    })
    .get("/:id/expiry", async ({ principal, params }) => json({ expire_time: formatExpiry(await files.expiry(principal, params.id)) }), {
      params: fileIdParams,
      parse: "none",
      detail: fileOp("getFileExpiry", "When the file deletes itself", ok("Expiry")),
    })
    .patch(
      "/:id/expiry",
      async ({ principal, params, body }) => {
        const expiry = files.expiryFrom(body, { allowClear: true });
        if (expiry === undefined) throw new AppError("invalid_argument", 'send {"expire_time": "<RFC 3339>"}, {"ttl": "7d"}, or {"expire_time": ""} for never');
        return json({ expire_time: formatExpiry(await files.setExpiry(principal, params.id, expiry)) });
      },
      {
        params: fileIdParams,
        ...expiryBody,
        detail: fileOp("setFileExpiry", "Set or clear the expiry", { ...ok("Expiry"), ...errors(415) }, { requestBody: { required: true } }),
      },
    )
    .post(
      "/:id/publish",
      async ({ principal, params }) => {
        await files.publish(principal, params.id);
        return json({});
      },
      { params: fileIdParams, parse: "none", detail: fileOp("publishFile", "Make a file public", ok("Empty")) },
    )
    .post(
      "/:id/unpublish",
      async ({ principal, params }) => {
        await files.unpublish(principal, params.id);
        return json({});
      },
      { params: fileIdParams, parse: "none", detail: fileOp("unpublishFile", "Make a public file `internal` again", ok("Empty")) },
    )
    .delete(
      "/:id",
      async ({ principal, params }) => {
        await files.delete(principal, params.id);
        return json({});
      },
      { params: fileIdParams, parse: "none", detail: fileOp("deleteFile", "Delete a file (owner only)", ok("Empty")) },
    )
    .get(
      "/:id/thumbnail",
      async ({ request, principal, params }) => {
        const reply = await thumbnailReply(deps.thumbnails, await files.get(principal, params.id), request.method, "private, max-age=60");
        return new Response(reply.body, { status: reply.status, headers: reply.headers });
      },
      {
        params: fileIdParams,
        parse: "none",
        detail: fileOp("getFileThumbnail", "A file's thumbnail: a WebP of at most 320 pixels on its longer edge (404: it has none)", {
          "200": { description: "The thumbnail", content: { "image/webp": { schema: { type: "string", format: "binary" } } } },
          ...errors(503),
        }),
      },
    )
    .put(
      "/:id/thumbnail",
      async ({ request, principal, params }) => {
        const file = await files.owned(principal, params.id);
        const image = await readBoundedBytes(request, MAX_SENT_THUMBNAIL_BYTES, () => new AppError("payload_too_large", `a thumbnail may be at most ${MAX_SENT_THUMBNAIL_BYTES} bytes`));
        await deps.thumbnails.put(file, image, request.headers.get("content-type") ?? "");
        return json({});
      },
      {
        params: fileIdParams,
        parse: "none",
        detail: fileOp("setFileThumbnail", "Send a file's thumbnail (a video's poster, a PDF's first page): JPEG, PNG, WebP or GIF of at most 256 KiB, made again here", { ...ok("Empty"), ...errors(403, 413, 415, 503) }, {
          requestBody: { required: true, content: Object.fromEntries(["image/jpeg", "image/png", "image/webp", "image/gif"].map((t) => [t, { schema: { type: "string", format: "binary" } }])) },
        }),
      },
    )
    .delete(
      "/:id/thumbnail",
      async ({ principal, params }) => {
        const file = await files.owned(principal, params.id);
        if (!(await deps.thumbnails.delete(file))) throw new AppError("not_found", "this file has no thumbnail stored");
        return json({});
      },
      { params: fileIdParams, parse: "none", detail: fileOp("deleteFileThumbnail", "Remove a file's thumbnail (an image's is made again when next asked for)", { ...ok("Empty"), ...errors(403) }) },
    );
}

/** `visibility` from a query string; empty means "use the default". */
function optionalVisibility(raw: string): Visibility | undefined {
  return raw === "" ? undefined : parseVisibility(raw);
}

/**
 * What an upload's headers say: its media type (with no Content-Type, the type registered for
 * `name`'s extension when a new file has a name: CONTRACT §17), a declared checksum, and a
 * Content-Length checked against the limit before a byte is read.
 */
function uploadHeaders(request: Request, maxUploadBytes: number, name: string | undefined) {
  const raw = request.headers.get("content-type");
  const contentType = name === undefined ? parseMediaType(raw) : uploadMediaType(raw, name);
  const expectedChecksum = parseDeclaredChecksum(request.headers);
  const length = request.headers.get("content-length");
  if (length !== null && /^\d+$/.test(length) && Number(length) > maxUploadBytes) {
    throw new AppError("payload_too_large", `content is larger than the limit of ${maxUploadBytes} bytes`);
  }
  return { contentType, expectedChecksum };
}
