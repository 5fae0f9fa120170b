/**
 * REST routes for guest upload links (CONTRACT §8): `POST /v1/upload-links`,
 * `GET /v1/upload-links` (`?show_deleted=true` lists deleted links too), `DELETE /v1/upload-links/{id}` (which ends the link's unfinished
 * uploads too: CONTRACT §10), and (beside the contract) what arrived
 * through one, `GET /v1/upload-links/{id}/files`. The JSON body becomes a {@link NewUploadLink}
 * here; the service decides.
 */
import { Elysia } from "elysia";
import type { Authenticator } from "../auth/principal.ts";
import { parseExpiry } from "../domain/expiry.ts";
import { parseName, parsePaging, parseQuery, parseVisibility } from "../domain/params.ts";
import { requireScope } from "../domain/principal.ts";
import { toUploadLinkJson } from "../domain/upload-link.ts";
import { AppError } from "../errors.ts";
import type { NewUploadLink, UploadLinkService } from "../service/upload-links.ts";
import type { UploadService } from "../service/uploads.ts";
import { toFilePageJson } from "../domain/file-page.ts";
import { onlyFields, optionalString, readJsonObject } from "./json-body.ts";
import { authRequest, requestContext } from "./request-context.ts";
import { json } from "./respond.ts";

export interface UploadLinksRoutesDeps {
  links: UploadLinkService;
  /** Deleting a link ends its unfinished uploads (CONTRACT §10). */
  uploads: UploadService;
  auth: Authenticator;
  baseUrl: () => string;
  clockMicros: () => number;
}

const raw = { parse: "none" } as const;
const LINK_FIELDS = new Set(["name", "expire_time", "ttl", "max_files", "max_bytes", "visibility"]);
const LINK_ID = /^[A-Za-z0-9_-]{21}$/;
/** A new link's body is a few short fields. */
const MAX_BODY_BYTES = 16 * 1024;
/** max_files at most this: a billion files through one link is a typo. */
const MAX_FILES_LIMIT = 1_000_000_000;

/** The /v1/upload-links routes as an Elysia plugin. */
export function uploadLinksRoutes(deps: UploadLinksRoutesDeps) {
  const { links, auth } = deps;
  return new Elysia({ name: "upload-links-routes", prefix: "/v1/upload-links" })
    .use(requestContext)
    .post(
      "",
      async ({ request, requestContext }) => {
        const principal = await auth.require(authRequest(request, requestContext));
        requireScope(principal, "files.write");
        const input = parseNewUploadLink(await readJsonObject(request, { maxBytes: MAX_BODY_BYTES, emptyIsObject: true, what: "the link" }), deps.clockMicros());
        return json(toUploadLinkJson(deps.baseUrl(), await links.create(principal, input)));
      },
      raw,
    )
    .get(
      "",
      async ({ request, requestContext }) => {
        const principal = await auth.require(authRequest(request, requestContext));
        const showDeleted = parseQuery(new URL(request.url).search, ["show_deleted"]).get("show_deleted");
        if (showDeleted !== undefined && showDeleted !== "true" && showDeleted !== "false") throw new AppError("invalid_argument", "show_deleted: must be true or false");
        const rows = await links.list(principal, showDeleted === "true");
        return json({ upload_links: rows.map((l) => toUploadLinkJson(deps.baseUrl(), l)) });
      },
      raw,
    )
    .get(
      "/:id/files",
      async ({ request, params, requestContext }) => {
        const principal = await auth.require(authRequest(request, requestContext));
        const id = parseLinkId(params.id);
        const { pageSize, cursor } = parsePaging(parseQuery(new URL(request.url).search, ["page_size", "page_token"]));
        return json(toFilePageJson(deps.baseUrl(), await links.files(principal, id, pageSize, cursor)));
      },
      raw,
    )
    .delete(
      "/:id",
      async ({ request, params, requestContext }) => {
        const principal = await auth.require(authRequest(request, requestContext));
        await deps.uploads.deleteLink(principal, parseLinkId(params.id));
        return json({});
      },
      raw,
    );
}

/** An upload link's ID from a path. @throws AppError invalid_argument */
function parseLinkId(raw: string): string {
  if (!LINK_ID.test(raw)) throw new AppError("invalid_argument", "id: not an upload link ID (21 characters of A-Z a-z 0-9 _ -)");
  return raw;
}

/**
 * The body of `POST /v1/upload-links`: every field optional; `name` a file-name-like string,
 * `expire_time` (RFC 3339) or `ttl` (`90s`, `15m`, `12h`, `7d`), `max_files` and `max_bytes`
 * positive whole numbers or null, `visibility` (default `private`).
 * @throws AppError invalid_argument naming the field
 */
export function parseNewUploadLink(body: Record<string, unknown>, nowMicros: number): NewUploadLink {
  onlyFields(body, LINK_FIELDS);
  const visibility = optionalString(body, "visibility");
  return {
    name: parseName(optionalString(body, "name") ?? ""),
    expiresAt: parseExpiry({ expire_time: optionalString(body, "expire_time"), ttl: optionalString(body, "ttl") }, nowMicros) ?? null,
    maxFiles: optionalLimit(body, "max_files", MAX_FILES_LIMIT),
    maxBytes: optionalLimit(body, "max_bytes", Number.MAX_SAFE_INTEGER),
    visibility: visibility === undefined || visibility === "" ? "private" : parseVisibility(visibility),
  };
}

function optionalLimit(body: Record<string, unknown>, key: string, max: number): number | null {
  const v = body[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1 || v > max) {
    throw new AppError("invalid_argument", `${key}: must be a whole number from 1 to ${max}, or null for no limit`);
  }
  return v;
}
