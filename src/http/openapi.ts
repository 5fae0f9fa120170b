/**
 * `GET /openapi.json` (CONTRACT §9): an OpenAPI 3.1 document of every REST endpoint, status and
 * error body, written as one typed module rather than kept beside the code. The resources come
 * from http/openapi-schemas.ts, whose property lists are checked at compile time against the
 * types the routes answer with, and the error bodies from errors.ts's table. Two tests keep the
 * paths honest (test/integration/openapi.test.ts): the app's registered routes and the
 * listener's content routes equal the document's paths, both ways; and every REST response of
 * the integration suites is validated against the document (test/support/openapi-check.ts).
 *
 * The document is static: built once, the same on every server, with no host name, file, user
 * or key in it.
 */
import pkg from "../../package.json" with { type: "json" };
import { TUS_CHECKSUM_ALGORITHMS, TUS_EXTENSIONS, TUS_VERSION } from "../domain/tus.ts";
import { DEFAULT_PAGE_SIZE, MAX_NAME_QUERY, MAX_PAGE_SIZE } from "../domain/params.ts";
import { VISIBILITIES } from "../domain/file.ts";
import { SCOPES } from "../domain/principal.ts";
import { ERROR_STATUSES, PATTERNS, ref, schemas, statusSchema, type Schema } from "./openapi-schemas.ts";
import { staticAssets, vendoredAssets } from "./static.ts";

/** An OpenAPI 3.1 Response Object. */
interface ResponseObject {
  description: string;
  headers?: Record<string, { description: string; schema: Schema; required?: boolean }>;
  content?: Record<string, { schema?: Schema }>;
}
type Responses = Record<string, ResponseObject | { $ref: string }>;
/** An OpenAPI 3.1 Parameter Object. */
interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required?: boolean;
  description?: string;
  schema: Schema;
}
/** An OpenAPI 3.1 Operation Object. */
interface Operation {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security?: Security;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; description?: string; content: Record<string, { schema?: Schema }> };
  responses: Responses;
}
type Method = "get" | "head" | "post" | "put" | "patch" | "delete" | "options";

// --- small builders ------------------------------------------------------------------------

const json = (schema: Schema) => ({ "application/json": { schema } });
const html = { "text/html": { schema: { type: "string" } } };
const header = (description: string, schema: Schema = { type: "string" }) => ({ description, schema });
/** A header the response always carries (test/support/openapi-check.ts checks it is there). */
const always = (description: string, schema: Schema = { type: "string" }) => ({ description, schema, required: true });
const LOCATION = { location: always("Where to go", { type: "string", format: "uri-reference" }) };

/** A 200 (or `status`) answer with a JSON body of component schema `name`. */
const ok = (name: string, description = name, status = "200"): Responses => ({ [status]: { description, content: json(ref(name)) } });

/** References to the JSON error responses (`components.responses.Error<status>`) of `statuses`. */
const errors = (...statuses: number[]): Responses => Object.fromEntries(statuses.map((s) => [String(s), { $ref: `#/components/responses/Error${s}` }]));

/** The same statuses as HTML pages for a person (sign-in, the guest upload page). */
const htmlErrors = (...statuses: number[]): Responses =>
  Object.fromEntries(statuses.map((s) => [String(s), { description: "An HTML page saying what went wrong", content: html }]));

/** What any request can meet: the server failing (500) or out of room or time (503). */
const SERVER = [500, 503];
/** What any authenticated request can meet besides: no valid credentials, a key without the scope, too many failures. */
const AUTH = [401, 403, 429, ...SERVER];

const pathParam = (name: string, schema: Schema, description: string): Parameter => ({ name, in: "path", required: true, schema, description });
const query = (name: string, schema: Schema, description: string): Parameter => ({ name, in: "query", schema, description });
const headerParam = (name: string, schema: Schema, description: string, required = false): Parameter => ({ name, in: "header", required, schema, description });

const fileId = pathParam("id", { type: "string", pattern: PATTERNS.fileId }, "File ID (a malformed one answers 400)");
const idOf = (what: string) => pathParam("id", { type: "string" }, `${what} ID`);
const pageSize = query("page_size", { type: "integer", minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE }, "Files per page");
const pageToken = query("page_token", { type: "string" }, "`next_page_token` of the previous page; absent or \"\" for the first");
const expireTime = query("expire_time", { type: "string", format: "date-time" }, "Delete the file at this time (RFC 3339)");
const ttl = query("ttl", { type: "string", pattern: PATTERNS.ttl }, "Delete the file after this long: `90s`, `15m`, `12h`, `7d`");
const checksums = [
  headerParam("x-goog-hash", { type: "string" }, "`crc32c=<base64>`: the upload is refused (400) and nothing stored unless the content matches"),
  headerParam("x-amz-checksum-crc32c", { type: "string" }, "`<base64>` CRC32C, as x-goog-hash"),
];
const rawContent = { description: "The raw content; its Content-Type becomes the file's `content_type` (absent: application/octet-stream)", content: { "*/*": {} } };
const jsonBody = (properties: Record<string, Schema>, description: string) => ({
  description,
  content: json({ type: "object", properties, additionalProperties: false }),
});
const expiryFields = {
  expire_time: { type: "string", description: "RFC 3339; \"\" clears (where clearing is allowed)" },
  ttl: { type: "string", pattern: PATTERNS.ttl, description: "`90s`, `15m`, `12h`, `7d`" },
};

/** An OpenAPI Security Requirement list: any one entry suffices; `{}` means anonymous. */
type Security = Record<string, string[]>[];
const KEY_OR_SESSION: Security = [{ apiKey: [] }, { session: [] }];
const SESSION: Security = [{ session: [] }];
const ANYONE: Security = [];

// --- operations ----------------------------------------------------------------------------

/** A file operation on /v1/files/{id}…: authenticated, owner-only changes (CONTRACT §2). */
function fileOp(operationId: string, summary: string, responses: Responses, extra: Partial<Operation> = {}): Operation {
  return { operationId, summary, tags: ["files"], parameters: [fileId], ...extra, responses: { ...responses, ...errors(400, 404, ...AUTH) } };
}

const files: Record<string, Partial<Record<Method, Operation>>> = {
  "/v1/files": {
    post: {
      operationId: "createFile",
      summary: "Upload a file",
      tags: ["files"],
      parameters: [
        query("slug", { type: "string", maxLength: 128, pattern: PATTERNS.slug }, "Last segment of the canonical URL"),
        query("name", { type: "string", maxLength: 255, pattern: PATTERNS.name }, "Original file name"),
        query("visibility", { type: "string", enum: [...VISIBILITIES], default: "internal" }, "Who can open the file by its URL"),
        expireTime,
        ttl,
        ...checksums,
      ],
      requestBody: rawContent,
      responses: { ...ok("File", "The new file"), ...errors(400, 413, ...AUTH) },
    },
    get: {
      operationId: "listFiles",
      summary: "List the caller's files, newest first",
      tags: ["files"],
      parameters: [query("q", { type: "string", maxLength: MAX_NAME_QUERY }, "Only files whose name contains this text"), pageSize, pageToken],
      responses: { ...ok("FilePage"), ...errors(400, ...AUTH) },
    },
  },
  "/v1/files/{id}": {
    get: fileOp("getFile", "A file's metadata", ok("File")),
    patch: fileOp("updateFile", "Set or clear slug, name, visibility", { ...ok("File", "The file; its `url` is the new canonical URL"), ...errors(415) }, {
      requestBody: {
        required: true,
        ...jsonBody(
          {
            slug: { type: "string", maxLength: 128, pattern: PATTERNS.slug, description: "\"\" clears" },
            name: { type: "string", maxLength: 255, pattern: PATTERNS.name, description: "\"\" clears" },
            visibility: { type: "string", enum: [...VISIBILITIES] },
          },
          "Absent fields are unchanged; unknown fields are refused",
        ),
      },
    }),
    delete: fileOp("deleteFile", "Delete a file (owner only)", ok("Empty")),
  },
  "/v1/files/{id}/content": {
    put: fileOp("replaceFileContent", "Replace the content; ID and URL stay", { ...ok("File"), ...errors(413) }, {
      parameters: [fileId, ...checksums],
      requestBody: rawContent,
    }),
  },
  "/v1/files/{id}/publish": { post: fileOp("publishFile", "Make a file public", ok("Empty")) },
  "/v1/files/{id}/unpublish": { post: fileOp("unpublishFile", "Make a public file `internal` again", ok("Empty")) },
  "/v1/files/{id}/expiry": {
    get: fileOp("getFileExpiry", "When the file deletes itself", ok("Expiry")),
    patch: fileOp("setFileExpiry", "Set or clear the expiry", { ...ok("Expiry"), ...errors(415) }, {
      requestBody: { required: true, ...jsonBody(expiryFields, "`expire_time` or `ttl`; `{\"expire_time\": \"\"}` clears") },
    }),
  },
  "/v1/files/{id}/shares": {
    post: fileOp("createShare", "Share a file by link", { ...ok("Share"), ...errors(415) }, {
      tags: ["shares"],
      requestBody: jsonBody(
        {
          ...expiryFields,
          max_downloads: { type: ["integer", "null"], minimum: 1, description: "Downloads (GETs from byte 0) before the link answers 410" },
          password: { type: "string", description: "Asked for as the password of HTTP Basic authentication" },
        },
        "Every field optional; an empty body is `{}`",
      ),
    }),
    get: fileOp("listShares", "A file's share links", ok("ShareList"), { tags: ["shares"] }),
  },
  "/v1/usage": {
    get: {
      operationId: "getUsage",
      summary: "The caller's storage use and quota",
      tags: ["files"],
      responses: { ...ok("Usage"), ...errors(400, ...AUTH) },
    },
  },
  "/v1/shares/{id}": {
    delete: {
      operationId: "deleteShare",
      summary: "Delete a share link (its URL answers 410 from then on)",
      tags: ["shares"],
      parameters: [idOf("Share")],
      responses: { ...ok("Empty"), ...errors(400, 404, ...AUTH) },
    },
  },
};

const uploadLinkId = pathParam("id", { type: "string", pattern: PATTERNS.fileId }, "Upload link ID");

const uploadLinks: typeof files = {
  "/v1/upload-links": {
    post: {
      operationId: "createUploadLink",
      summary: "Create a guest upload link",
      tags: ["upload-links"],
      requestBody: jsonBody(
        {
          name: { type: "string", maxLength: 255 },
          ...expiryFields,
          max_files: { type: ["integer", "null"], minimum: 1 },
          max_bytes: { type: ["integer", "null"], minimum: 1 },
          visibility: { type: "string", enum: [...VISIBILITIES], default: "private" },
        },
        "Every field optional",
      ),
      responses: { ...ok("UploadLink"), ...errors(400, 415, ...AUTH) },
    },
    get: {
      operationId: "listUploadLinks",
      summary: "The caller's upload links, newest first",
      tags: ["upload-links"],
      parameters: [query("show_deleted", { type: "boolean", default: false }, "Also list deleted (revoked) links, whose received files stay listed at /v1/upload-links/{id}/files (AIP-164)")],
      responses: { ...ok("UploadLinkList"), ...errors(400, ...AUTH) },
    },
  },
  "/v1/upload-links/{id}": {
    delete: {
      operationId: "deleteUploadLink",
      summary: "Delete an upload link: it takes no more uploads, and its unfinished uploads end",
      tags: ["upload-links"],
      parameters: [uploadLinkId],
      responses: { ...ok("Empty"), ...errors(400, 404, ...AUTH) },
    },
  },
  "/v1/upload-links/{id}/files": {
    get: {
      operationId: "listUploadLinkFiles",
      summary: "The files that arrived through an upload link, newest first",
      tags: ["upload-links"],
      parameters: [uploadLinkId, pageSize, pageToken],
      responses: { ...ok("FilePage"), ...errors(400, 404, ...AUTH) },
    },
  },
  "/u/{token}": {
    get: {
      operationId: "guestUploadPage",
      summary: "The guest upload page (HTML)",
      tags: ["upload-links"],
      security: ANYONE,
      parameters: [pathParam("token", { type: "string" }, "The link's token")],
      responses: { "200": { description: "The page", content: html }, ...htmlErrors(404, 410, 429, ...SERVER) },
    },
    post: {
      operationId: "guestUpload",
      summary: "Upload a file through a guest upload link, without an account",
      tags: ["upload-links"],
      security: ANYONE,
      parameters: [pathParam("token", { type: "string" }, "The link's token"), query("name", { type: "string", maxLength: 255, pattern: PATTERNS.name }, "File name"), ...checksums],
      requestBody: rawContent,
      responses: { ...ok("File", "The file, now in the link owner's account"), ...errors(400, 404, 410, 413, 429, ...SERVER) },
    },
  },
};

const tusResumable = headerParam("tus-resumable", { const: TUS_VERSION }, "The tus version; anything else answers 412", true);
const uploadId = pathParam("id", { type: "string" }, "Upload ID (from the creation's Location)");
const TUS: Security = [{ apiKey: [] }, { session: [] }, { uploadLinkToken: [] }];
const tusHeaders = {
  "tus-resumable": always("`1.0.0`"),
  "upload-offset": always("Bytes received so far", { type: "string", pattern: "^[0-9]+$" }),
  "upload-expires": header("While unfinished: when the upload expires (HTTP-date)"),
  "cubby-file-id": header("Once finished: the File's ID", { type: "string", pattern: PATTERNS.fileId }),
};
const TUS_ERRORS = errors(400, 404, 409, 410, 412, 413, 415, 460, ...AUTH);
const tusOptions = (operationId: string): Operation => ({
  operationId,
  summary: "What the tus server supports",
  tags: ["uploads"],
  security: ANYONE,
  responses: {
    "204": {
      description: `tus ${TUS_VERSION}; extensions ${TUS_EXTENSIONS.join(", ")}; checksums ${TUS_CHECKSUM_ALGORITHMS.join(", ")}`,
      headers: {
        "tus-resumable": always(TUS_VERSION),
        "tus-version": always(TUS_VERSION),
        "tus-extension": always(TUS_EXTENSIONS.join(",")),
        "tus-max-size": always("MAX_UPLOAD_BYTES"),
        "tus-checksum-algorithm": always(TUS_CHECKSUM_ALGORITHMS.join(",")),
      },
    },
    ...errors(...SERVER),
  },
});

const uploads: typeof files = {
  "/v1/uploads": {
    options: tusOptions("tusOptions"),
    post: {
      operationId: "createUpload",
      summary: "Create a resumable upload (tus creation, creation-with-upload)",
      tags: ["uploads"],
      security: TUS,
      parameters: [
        tusResumable,
        headerParam("upload-length", { type: "string", pattern: "^[0-9]+$" }, "Total size in bytes", true),
        headerParam("upload-metadata", { type: "string" }, "`key base64value,…`: filename, filetype, slug, visibility, expire_time"),
        headerParam("upload-checksum", { type: "string" }, "`crc32c <base64>` or `sha1 <base64>` of the bytes sent with the creation"),
      ],
      requestBody: { description: "Optionally the first bytes (Content-Type: application/offset+octet-stream)", content: { "application/offset+octet-stream": {} } },
      responses: { "201": { description: "Created", headers: { ...LOCATION, ...tusHeaders } }, ...TUS_ERRORS },
    },
    get: {
      operationId: "listUploads",
      summary: "The caller's unfinished uploads: their own and those made through their upload links, newest first",
      description:
        "An upload made through a guest link holds a file and its Upload-Length of the link's max_files and max_bytes from its creation until it finishes, expires or is ended (DELETE), and its Upload-Length of the owner's quota.",
      tags: ["uploads"],
      parameters: [query("page_size", { type: "integer", minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE }, "Uploads per page"), pageToken],
      responses: { ...ok("UnfinishedUploadPage"), ...errors(400, ...AUTH) },
    },
  },
  "/v1/uploads/{id}": {
    options: tusOptions("tusOptionsUpload"),
    head: {
      operationId: "getUploadOffset",
      summary: "Where an upload stands",
      tags: ["uploads"],
      security: TUS,
      parameters: [uploadId, tusResumable],
      responses: { "200": { description: "Upload-Offset, Upload-Length, Upload-Metadata", headers: tusHeaders }, ...TUS_ERRORS },
    },
    patch: {
      operationId: "appendUpload",
      summary: "Send bytes at the current offset",
      tags: ["uploads"],
      security: TUS,
      parameters: [
        uploadId,
        tusResumable,
        headerParam("upload-offset", { type: "string", pattern: "^[0-9]+$" }, "Must equal the upload's offset (409 otherwise)", true),
        headerParam("upload-checksum", { type: "string" }, "`crc32c <base64>` or `sha1 <base64>` of this chunk (460 on mismatch)"),
      ],
      requestBody: { required: true, content: { "application/offset+octet-stream": {} } },
      responses: { "204": { description: "Accepted; the last chunk's answer carries Cubby-File-Id", headers: tusHeaders }, ...TUS_ERRORS },
    },
    delete: {
      operationId: "terminateUpload",
      summary: "End an upload (tus termination): its bytes are removed and what it reserved is released",
      description: "Also a plain REST request: without Tus-Resumable. The owner ends their own and their links' uploads; a guest those of their link. 409 while a PATCH is writing the upload.",
      tags: ["uploads"],
      security: TUS,
      parameters: [uploadId, headerParam("tus-resumable", { const: TUS_VERSION }, "The tus version, or absent (a REST request); another answers 412")],
      responses: { "204": { description: "Gone", headers: { "tus-resumable": always("`1.0.0`") } }, ...TUS_ERRORS },
    },
  },
};

const contentHeaders = {
  etag: always("Strong; changes with the content"),
  "last-modified": always("HTTP-date"),
  "accept-ranges": always("`bytes`"),
  "cache-control": always("`no-cache` plus `public` or `private`"),
  "content-disposition": always("`inline` (or `attachment` with `?download=1`) with the file's name (RFC 6266)"),
  "x-content-type-options": always("`nosniff`"),
  "content-security-policy": header("`sandbox; …` for active content (HTML, SVG, XML…)"),
};
const contentParams = [
  query("download", { const: "1" }, "Content-Disposition: attachment"),
  headerParam("range", { type: "string" }, "One byte range (RFC 9110 §14)"),
  headerParam("if-none-match", { type: "string" }, "→ 304 when it matches"),
  headerParam("if-modified-since", { type: "string" }, "→ 304 when not modified since"),
  headerParam("if-range", { type: "string" }, "The Range applies only if this still matches"),
];
const anyContent = { "*/*": {} };
/** What a content GET answers; HEAD answers the same without a body. */
const contentResponses = (redirect: string | undefined, extraErrors: number[]): Responses => ({
  "200": { description: "The content, with its stored Content-Type", headers: contentHeaders, content: anyContent },
  "206": { description: "The requested range", headers: { ...contentHeaders, "content-range": always("`bytes start-end/size`") }, content: anyContent },
  ...(redirect === undefined ? {} : { "302": { description: redirect, headers: LOCATION } }),
  "304": { description: "Not modified" },
  "416": { description: "Range not satisfiable", headers: { "content-range": always("`bytes */size`") } },
  ...errors(400, 404, 429, ...extraErrors, ...SERVER),
});

/** GET and HEAD of a content URL (`head` has no body, so no `content`). */
function getAndHead(operationId: string, summary: string, base: Omit<Operation, "operationId" | "summary">): Partial<Record<Method, Operation>> {
  const noBody = Object.fromEntries(
    Object.entries(base.responses).map(([s, r]) => [s, "$ref" in r ? r : { description: r.description, ...(r.headers === undefined ? {} : { headers: r.headers }) }]),
  );
  return { get: { operationId, summary, ...base }, head: { operationId: `${operationId}Head`, summary: `${summary} (headers only)`, ...base, responses: noBody } };
}

const contentAccess: Security = [{}, { apiKey: [] }, { session: [] }];
const contentOp = (): Omit<Operation, "operationId" | "summary"> => ({
  tags: ["content"],
  description:
    "Access follows visibility: `public` anyone, `internal` any signed-in user, `private` the owner. Not allowed and signed in: 404; not signed in: 401, or for a browser navigation (Accept: text/html) 302 to sign-in; a key without `files.read`: 403.",
  security: contentAccess,
  parameters: [pathParam("id", { type: "string", pattern: PATTERNS.fileId }, "File ID"), ...contentParams],
  responses: {
    ...contentResponses("To the canonical URL (a stale or absent slug), or to sign-in", [403]),
    "401": { description: "Sign-in needed", headers: { "www-authenticate": always("`Bearer`") }, content: json(statusSchema(401)) },
  },
});
const slugParam = pathParam("slug", { type: "string" }, "Any slug: not the file's current one redirects to the canonical URL");

const shareToken = pathParam("token", { type: "string" }, "The share's token (from its `url`)");
const content: typeof files = {
  "/{id}": getAndHead("getContent", "A file's content", contentOp()),
  "/{id}/{slug}": getAndHead("getContentWithSlug", "A file's content", { ...contentOp(), parameters: [...contentOp().parameters!, slugParam] }),
  "/s/{token}": {
    ...getAndHead("getSharedContent", "A shared file's content", {
      tags: ["shares"],
      description: "Anyone with the link, whatever the file's visibility. A GET from byte 0 counts as a download; past its limits the link answers 410.",
      security: [{}, { sharePassword: [] }, { shareUnlock: [] }],
      parameters: [shareToken, ...contentParams],
      responses: {
        ...contentResponses(undefined, [410]),
        "401": {
          description: "The share has a password: a form for a browser, else a JSON error with `WWW-Authenticate: Basic`",
          headers: { "www-authenticate": header("`Basic`") },
          content: { ...json(statusSchema(401)), ...html },
        },
      },
    }),
    post: {
      operationId: "unlockShare",
      summary: "The password form's POST: leaves an unlock cookie and redirects back",
      tags: ["shares"],
      security: ANYONE,
      parameters: [shareToken],
      requestBody: {
        required: true,
        content: { "application/x-www-form-urlencoded": { schema: { type: "object", properties: { password: { type: "string" } }, required: ["password"] } } },
      },
      responses: {
        "303": { description: "Unlocked: back to the share's URL", headers: LOCATION },
        "401": { description: "Wrong password: the form again", content: html },
        ...errors(400, 404, 410, 415, 429, ...SERVER),
      },
    },
  },
};

const auth: typeof files = {
  "/auth/login": {
    get: {
      operationId: "signIn",
      summary: "Start signing in at the identity provider",
      tags: ["auth"],
      security: ANYONE,
      parameters: [query("next", { type: "string" }, "Same-origin path to return to")],
      responses: { "302": { description: "To the provider", headers: LOCATION }, ...htmlErrors(400, 404, 429, ...SERVER) },
    },
  },
  "/auth/idp/callback": {
    get: {
      operationId: "signInCallback",
      summary: "The provider's redirect back: starts a session",
      tags: ["auth"],
      security: ANYONE,
      parameters: [query("code", { type: "string" }, "Authorization code"), query("state", { type: "string" }, "Flow state")],
      responses: { "302": { description: "Signed in: to `next` with a session cookie", headers: LOCATION }, ...htmlErrors(400, 401, 403, 404, 429, ...SERVER) },
    },
  },
  "/auth/logout": {
    post: { operationId: "signOut", summary: "End the session", tags: ["auth"], security: SESSION, responses: { ...ok("Empty"), ...errors(400, ...AUTH) } },
  },
  "/auth/session": {
    get: { operationId: "getSession", summary: "Who is signed in (the dashboard asks on load)", tags: ["auth"], security: [{}, { session: [] }], responses: { ...ok("Session"), ...errors(400, 429, ...SERVER) } },
  },
  "/auth/keys": {
    post: {
      operationId: "createApiKey",
      summary: "Mint an API key (the secret is shown this once)",
      tags: ["auth"],
      security: SESSION,
      requestBody: jsonBody(
        { name: { type: "string" }, scopes: { type: "array", items: { type: "string", enum: [...SCOPES] } }, ...expiryFields },
        "Every field optional; default scopes: all",
      ),
      responses: { ...ok("NewApiKey"), ...errors(400, 415, ...AUTH) },
    },
    get: { operationId: "listApiKeys", summary: "The user's API keys (never their secrets)", tags: ["auth"], security: SESSION, responses: { ...ok("ApiKeyList"), ...errors(400, ...AUTH) } },
  },
  "/auth/keys/{id}": {
    delete: {
      operationId: "revokeApiKey",
      summary: "Revoke an API key",
      tags: ["auth"],
      security: SESSION,
      parameters: [idOf("Key")],
      responses: { ...ok("Empty"), ...errors(400, 404, ...AUTH) },
    },
  },
};

const service: typeof files = {
  "/healthz": { get: { operationId: "health", summary: "200 while serving", tags: ["service"], security: ANYONE, responses: { ...ok("Health"), ...errors(...SERVER) } } },
  "/openapi.json": {
    get: {
      operationId: "openApi",
      summary: "This document",
      tags: ["service"],
      security: ANYONE,
      responses: { "200": { description: "OpenAPI 3.1", content: json({ type: "object" }) }, ...errors(...SERVER) },
    },
  },
};

const DESCRIPTION = `The REST API of cubby (CONTRACT §2, §3, §5, §8): files, expiry, share links, guest upload links, resumable uploads (tus 1.0.0), content URLs, sign-in and API keys.

Out of scope: the RPC API (gRPC, Connect, gRPC-Web: proto/cubby/v1/files.proto and server reflection), \`/metrics\` (Prometheus text exposition), \`/mcp\` (Model Context Protocol: its tools describe themselves) and the dashboard's static files (\`/\`, \`/app.js\`, \`/app.css\`, \`/assets/…\`). Any path or method not listed answers 404 (or 400 for a malformed request) with the error body below.

Every failure is \`google.rpc.Status\` JSON, \`{"code": <gRPC code>, "message": "…", "details": []}\`; each error response below fixes its \`code\`.`;

/**
 * Paths the server answers that the document leaves out on purpose (its description says which
 * and why): endpoints with a protocol of their own, and the dashboard's static files.
 */
export const OUT_OF_SCOPE_PATHS: ReadonlySet<string> = new Set(["/metrics", "/mcp", ...Object.keys(staticAssets), ...Object.keys(vendoredAssets)]);

/** The OpenAPI 3.1 document served at /openapi.json. */
export const openApiDocument = {
  openapi: "3.1.0",
  info: {
    title: "cubby",
    version: pkg.version,
    description: DESCRIPTION,
    license: { name: "MIT", identifier: "MIT" },
  },
  security: KEY_OR_SESSION,
  tags: [
    { name: "files", description: "Files and their metadata (CONTRACT §2)" },
    { name: "content", description: "Content URLs (CONTRACT §3)" },
    { name: "shares", description: "Share links (CONTRACT §8)" },
    { name: "upload-links", description: "Guest upload links (CONTRACT §8)" },
    { name: "uploads", description: "Resumable uploads, tus 1.0.0 (CONTRACT §8)" },
    { name: "auth", description: "Sign-in, sessions and API keys (CONTRACT §5)" },
    { name: "service", description: "Health and this document" },
  ],
  paths: { ...files, ...uploadLinks, ...uploads, ...content, ...auth, ...service },
  components: {
    schemas,
    responses: Object.fromEntries(
      ERROR_STATUSES.map((s) => [
        `Error${s}`,
        {
          description: `HTTP ${s}: \`google.rpc.Status\``,
          ...errorHeaders(s),
          content: json(statusSchema(s)),
        },
      ]),
    ),
    securitySchemes: {
      apiKey: { type: "http", scheme: "bearer", description: "An API key (`cubby keys create`, or POST /auth/keys)" },
      session: {
        type: "apiKey",
        in: "cookie",
        name: "cubby_session",
        description: "The dashboard's session cookie (`__Host-cubby_session` when HOSTNAME is https); same-origin requests only",
      },
      uploadLinkToken: { type: "http", scheme: "bearer", description: "A guest upload link's token (tus only)" },
      sharePassword: { type: "http", scheme: "basic", description: "A share's password (any user name)" },
      shareUnlock: { type: "apiKey", in: "cookie", name: "cubby_share_unlock", description: "Left by the share's password form" },
    },
  },
};

/** Headers an error response with HTTP `status` carries (http/respond.ts errorHeaders). */
function errorHeaders(status: number): Pick<ResponseObject, "headers"> {
  if (status === 401) return { headers: { "www-authenticate": always("`Bearer realm=\"cubby\"`") } };
  if (status === 429) return { headers: { "retry-after": always("Seconds to wait", { type: "string", pattern: "^[0-9]+$" }) } };
  return {};
}

/** Written once: the document never changes while the process runs. */
const documentText = JSON.stringify(openApiDocument);

/** The response of `GET /openapi.json`: the document, cacheable (it changes only with a new version). */
export function openApiResponse(): Response {
  return new Response(documentText, {
    headers: {
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(documentText)),
      "cache-control": "public, max-age=3600",
      "x-content-type-options": "nosniff",
    },
  });
}
