/**
 * REST routes for guest upload links (CONTRACT §8): `POST /v1/upload-links`,
 * `GET /v1/upload-links` (`?show_deleted=true` lists deleted links too), `DELETE /v1/upload-links/{id}` (which ends the link's unfinished
 * uploads too: CONTRACT §10), and (beside the contract) what arrived
 * through one, `GET /v1/upload-links/{id}/files`. The JSON body becomes a {@link NewUploadLink}
 * here; the service decides.
 */
import { Elysia, t } from "elysia";
import type { Authenticator } from "../auth/principal.ts";
import { parseExpiry } from "../domain/expiry.ts";
import { VISIBILITIES } from "../domain/file.ts";
import { DEFAULT_PAGE_SIZE, nextPageField, parseName, parseVisibility } from "../domain/params.ts";
import { requireScope, type Principal } from "../domain/principal.ts";
import { toUploadLinkJson } from "../domain/upload-link.ts";
import { AppError } from "../errors.ts";
import type { NewUploadLink, UploadLinkService } from "../service/upload-links.ts";
import type { UploadService } from "../service/uploads.ts";
import { toFilePageJson } from "../domain/file-page.ts";
import { AUTH, detail, errors, FILE_ID, ok, type Responses } from "./describe.ts";
import { bodyString, checked, closedBody, expiryFields, jsonBody, pagingQuery, queryParsed, strictQuery } from "./inputs.ts";
import { onlyFields, optionalString } from "./json-body.ts";
import { PATTERNS } from "./openapi-schemas.ts";
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

const LINK_FIELDS = new Set(["name", "expire_time", "ttl", "max_files", "max_bytes", "visibility"]);
const LINK_ID = /^[A-Za-z0-9_-]{21}$/;
/** A new link's body is a few short fields. */
const MAX_BODY_BYTES = 16 * 1024;
/** max_files at most this: a billion files through one link is a typo. */
const MAX_FILES_LIMIT = 1_000_000_000;

/** `{id}` of /v1/upload-links/{id}…. */
const linkIdParams = t.Object({ id: checked({ ...FILE_ID, description: "Upload link ID" }, (raw) => parseLinkId(raw as string)) });

const limit = (key: string, max: number, description: string) =>
  t.Optional(checked({ type: ["integer", "null"], minimum: 1, maximum: max, description }, (raw) => optionalLimit({ [key]: raw }, key, max)));

const newLinkBody = jsonBody(
  closedBody(
    {
      name: t.Optional(bodyString("name", { maxLength: 255, pattern: PATTERNS.name, description: "Shown on the guest page" }, parseName)),
      ...expiryFields,
      max_files: limit("max_files", MAX_FILES_LIMIT, "Files the link takes; null: no limit"),
      max_bytes: limit("max_bytes", Number.MAX_SAFE_INTEGER, "Bytes the link takes; null: no limit"),
      visibility: t.Optional(bodyString("visibility", { enum: ["", ...VISIBILITIES], default: "private" }, (raw) => (raw === "" ? raw : parseVisibility(raw)))),
    },
    "Every field optional",
  ),
  { maxBytes: MAX_BODY_BYTES, emptyIsObject: true, what: "the link" },
);

const linkOp = (operationId: string, summary: string, responses: Responses) => detail({ operationId, summary, tags: ["upload-links"], responses: { ...responses, ...errors(400, ...AUTH) } });

/** The /v1/upload-links routes as an Elysia plugin. */
export function uploadLinksRoutes(deps: UploadLinksRoutesDeps) {
  const { links, auth } = deps;
  return new Elysia({ name: "upload-links-routes", prefix: "/v1/upload-links" })
    .use(requestContext)
    .derive(async ({ request, requestContext }) => ({ principal: await auth.require(authRequest(request, requestContext)) }))
    .post(
      "",
      async ({ principal, body }) => {
        // Validated field by field already; this makes the link (and decides the expiry with the clock).
        const input = parseNewUploadLink(body, deps.clockMicros());
        return json(toUploadLinkJson(deps.baseUrl(), await links.create(principal, input)));
      },
      {
        ...newLinkBody,
        // A key without files.write is refused before its body is read.
        transform: [({ principal }: { principal: Principal }) => requireScope(principal, "files.write"), newLinkBody.transform],
        detail: linkOp("createUploadLink", "Create a guest upload link", { ...ok("UploadLink"), ...errors(415) }),
      },
    )
    .get(
      "",
      async ({ principal, query }) => {
        const page = await links.list(principal, query.show_deleted === true, query.page_size ?? DEFAULT_PAGE_SIZE, query.page_token);
        return json({ upload_links: page.items.map((l) => toUploadLinkJson(deps.baseUrl(), l)), ...nextPageField(page) });
      },
      {
        ...strictQuery({
          ...pagingQuery,
          show_deleted: queryParsed(
            { enum: ["true", "false"], default: "false", description: "Also list deleted (revoked) links, whose received files stay listed at /v1/upload-links/{id}/files (AIP-164)" },
            parseShowDeleted,
          ),
        }),
        detail: linkOp("listUploadLinks", "The caller's upload links, newest first", ok("UploadLinkList")),
      },
    )
    .get(
      "/:id/files",
      async ({ principal, params, query }) =>
        json(toFilePageJson(deps.baseUrl(), await links.files(principal, params.id, query.page_size ?? DEFAULT_PAGE_SIZE, query.page_token))),
      {
        params: linkIdParams,
        ...strictQuery(pagingQuery),
        detail: linkOp("listUploadLinkFiles", "The files that arrived through an upload link, newest first", { ...ok("FilePage"), ...errors(404) }),
      },
    )
    .delete(
      "/:id",
      async ({ principal, params }) => {
        await deps.uploads.deleteLink(principal, params.id);
        return json({});
      },
      {
        params: linkIdParams,
        parse: "none",
        detail: linkOp("deleteUploadLink", "Delete an upload link: it takes no more uploads, and its unfinished uploads end", { ...ok("Empty"), ...errors(404) }),
      },
    );
}

/** `show_deleted`: `true` or `false` (AIP-164). @throws AppError invalid_argument */
function parseShowDeleted(raw: string): boolean {
  if (raw !== "true" && raw !== "false") throw new AppError("invalid_argument", "show_deleted: must be true or false");
  return raw === "true";
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
