/**
 * REST routes for files under /v1 (CONTRACT §2): query strings, headers and JSON bodies become
 * domain values here, the service decides, and records become the spec's File JSON.
 */
import { Elysia } from "elysia";
import { AppError } from "../errors.ts";
import { formatExpiry } from "../domain/expiry.ts";
import { toFileJson, type Visibility } from "../domain/file.ts";
import { toFilePageJson } from "../domain/file-page.ts";
import { parseDeclaredChecksum } from "../domain/checksum.ts";
import { parseFileId, parseMediaType, parseNameQuery, parseQuery, parseName, parsePaging, parseSlug, parseVisibility } from "../domain/params.ts";
import type { Authenticator } from "../auth/principal.ts";
import type { FilePatch, FileService } from "../service/files.ts";
import { readJsonObject, onlyFields, optionalString } from "./json-body.ts";
import { authRequest, requestContext } from "./request-context.ts";
import { json } from "./respond.ts";

export interface FilesRoutesDeps {
  files: FileService;
  auth: Authenticator;
  /** Public origin for file URLs (HOSTNAME). */
  baseUrl: () => string;
  maxUploadBytes: number;
}

/** Largest PATCH body read, in bytes: three short strings need far less. */
const MAX_PATCH_BYTES = 64 * 1024;

// Bodies are parsed by the handlers themselves (raw content streams to disk; PATCH JSON is
// checked strictly), so Elysia's body parsing is off on every route.
const raw = { parse: "none" } as const;

/** The /v1 file routes as an Elysia plugin. */
export function filesRoutes(deps: FilesRoutesDeps) {
  const { files, auth } = deps;
  const fileJson = (record: Parameters<typeof toFileJson>[1]) => toFileJson(deps.baseUrl(), record);

  return new Elysia({ name: "files-routes", prefix: "/v1/files" })
    .use(requestContext)
    .post(
      "",
      async ({ request, requestContext }) => {
        const principal = await auth.require(authRequest(request, requestContext));
        const query = parseQuery(new URL(request.url).search, ["slug", "name", "visibility", "expire_time", "ttl"]);
        const input = {
          slug: parseSlug(query.get("slug") ?? ""),
          name: parseName(query.get("name") ?? ""),
          visibility: optionalVisibility(query.get("visibility")),
          expiresAt: files.expiryFrom({ expire_time: query.get("expire_time"), ttl: query.get("ttl") }),
          ...uploadHeaders(request, deps.maxUploadBytes),
          content: request.body,
        };
        return json(fileJson(await files.create(principal, input)));
      },
      raw,
    )
    .get(
      "",
      async ({ request, requestContext }) => {
        const principal = await auth.require(authRequest(request, requestContext));
        const query = parseQuery(new URL(request.url).search, ["q", "page_size", "page_token"]);
        const nameContains = parseNameQuery(query.get("q") ?? "");
        const { pageSize, cursor } = parsePaging(query);
        return json(toFilePageJson(deps.baseUrl(), await files.list(principal, pageSize, cursor, nameContains)));
      },
      raw,
    )
    .get(
      "/:id",
      async ({ request, params, requestContext }) => {
        const principal = await auth.require(authRequest(request, requestContext));
        return json(fileJson(await files.get(principal, parseFileId(params.id))));
      },
      raw,
    )
    .put(
      "/:id/content",
      async ({ request, params, requestContext }) => {
        const principal = await auth.require(authRequest(request, requestContext));
        const id = parseFileId(params.id);
        const input = { ...uploadHeaders(request, deps.maxUploadBytes), content: request.body };
        return json(fileJson(await files.replaceContent(principal, id, input)));
      },
      raw,
    )
    .patch(
      "/:id",
      async ({ request, params, requestContext }) => {
        const principal = await auth.require(authRequest(request, requestContext));
        const id = parseFileId(params.id);
        const patch = await readFilePatch(request);
        return json(fileJson(await files.update(principal, id, patch)));
      },
      raw,
    )
    .get(
      "/:id/expiry",
      async ({ request, params, requestContext }) => {
        const principal = await auth.require(authRequest(request, requestContext));
        return json({ expire_time: formatExpiry(await files.expiry(principal, parseFileId(params.id))) });
      },
      raw,
    )
    .patch(
      "/:id/expiry",
      async ({ request, params, requestContext }) => {
        const principal = await auth.require(authRequest(request, requestContext));
        const id = parseFileId(params.id);
        const body = await readJsonObject(request, { maxBytes: MAX_PATCH_BYTES, what: "the expiry" });
        onlyFields(body, EXPIRY_FIELDS);
        const expiry = files.expiryFrom({ expire_time: optionalString(body, "expire_time"), ttl: optionalString(body, "ttl") }, { allowClear: true });
        if (expiry === undefined) throw new AppError("invalid_argument", 'send {"expire_time": "<RFC 3339>"}, {"ttl": "7d"}, or {"expire_time": ""} for never');
        return json({ expire_time: formatExpiry(await files.setExpiry(principal, id, expiry)) });
      },
      raw,
    )
    .post(
      "/:id/publish",
      async ({ request, params, requestContext }) => {
        const principal = await auth.require(authRequest(request, requestContext));
        await files.publish(principal, parseFileId(params.id));
        return json({});
      },
      raw,
    )
    .post(
      "/:id/unpublish",
      async ({ request, params, requestContext }) => {
        const principal = await auth.require(authRequest(request, requestContext));
        await files.unpublish(principal, parseFileId(params.id));
        return json({});
      },
      raw,
    )
    .delete(
      "/:id",
      async ({ request, params, requestContext }) => {
        const principal = await auth.require(authRequest(request, requestContext));
        await files.delete(principal, parseFileId(params.id));
        return json({});
      },
      raw,
    );
}

/** `visibility` from a query string; absent or empty means "use the default". */
function optionalVisibility(raw: string | undefined): Visibility | undefined {
  return raw === undefined || raw === "" ? undefined : parseVisibility(raw);
}

/**
 * What an upload's headers say: its media type, a declared checksum, and a Content-Length
 * checked against the limit before a byte is read.
 */
function uploadHeaders(request: Request, maxUploadBytes: number) {
  const contentType = parseMediaType(request.headers.get("content-type"));
  const expectedChecksum = parseDeclaredChecksum(request.headers);
  const length = request.headers.get("content-length");
  if (length !== null && /^\d+$/.test(length) && Number(length) > maxUploadBytes) {
    throw new AppError("payload_too_large", `content is larger than the limit of ${maxUploadBytes} bytes`);
  }
  return { contentType, expectedChecksum };
}

const PATCH_FIELDS = new Set(["slug", "name", "visibility"]);
const EXPIRY_FIELDS = new Set(["expire_time", "ttl"]);

/**
 * The JSON body of PATCH /v1/files/{id}: an object with optional string fields `slug`, `name`
 * and `visibility`. Unknown fields, wrong types and non-objects are 400; a body that is not
 * `application/json` is 415 (CONTRACT §2).
 */
async function readFilePatch(request: Request): Promise<FilePatch> {
  const body = await readJsonObject(request, { maxBytes: MAX_PATCH_BYTES, what: "the changes" });
  onlyFields(body, PATCH_FIELDS);
  const slug = optionalString(body, "slug");
  const name = optionalString(body, "name");
  const visibility = optionalString(body, "visibility");
  return {
    slug: slug === undefined ? undefined : parseSlug(slug),
    name: name === undefined ? undefined : parseName(name),
    visibility: visibility === undefined ? undefined : parseVisibility(visibility),
  };
}
