/**
 * `GET /openapi.json` (CONTRACT §9): an OpenAPI 3.1 document of every REST endpoint, status and
 * error body, generated from the routes. Each route of the HTTP app declares its path, query and
 * JSON body as Elysia schemas (http/inputs.ts) and says the rest in its `detail`
 * (http/describe.ts): summary, security, responses, the headers it reads itself; the generator of
 * @elysiajs/openapi (`toOpenAPISchema`) turns them into `paths`, and {@link openApiDocumentOf}
 * completes what it leaves out (a `detail`'s header parameters beside the declared ones, a JSON
 * body read by http/inputs.ts's reader). What is not an Elysia route stays written here: the
 * content URLs and share links the listener answers itself (serving/content.ts), and the
 * `components` (http/openapi-schemas.ts: resources checked at compile time against the types the
 * routes answer with; the error bodies from errors.ts's table).
 *
 * Two tests keep the document honest (test/integration/openapi.test.ts): the app's routes and the
 * listener's content routes equal the document's paths, both ways, and each declared input is
 * refused as its schema says; and every REST response of the integration suites is validated
 * against the document (test/support/openapi-check.ts).
 *
 * The document is static: the same on every server, with no host name, file, user or key in it.
 */
import { toOpenAPISchema, unwrapSchema } from "@elysiajs/openapi/openapi";
import type { AnyElysia } from "elysia";
import pkg from "../../package.json" with { type: "json" };
import {
  always,
  ANYONE,
  errorResponseHeaders,
  errors,
  errorsOrPages,
  header,
  headerParam,
  html,
  json,
  KEY_OR_SESSION,
  LOCATION,
  ok,
  pathParam,
  queryParam,
  SERVER,
  type Operation,
  type Parameter,
  type ResponseObject,
  type Responses,
  type Security,
} from "./describe.ts";
import { ERROR_STATUSES, PATTERNS, schemas, statusSchema, type Schema } from "./openapi-schemas.ts";
import { dashboardPages, staticAssets, vendoredAssets } from "./static.ts";

type Method = "get" | "head" | "post" | "put" | "patch" | "delete" | "options";
type PathItem = Partial<Record<Method, Operation>>;

// --- what the listener answers itself (not Elysia routes) ---------------------------------

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
  queryParam("download", { const: "1" }, "Content-Disposition: attachment"),
  headerParam("range", { type: "string" }, "One byte range (RFC 9110 §14)"),
  headerParam("if-none-match", { type: "string" }, "→ 304 when it matches"),
  headerParam("if-modified-since", { type: "string" }, "→ 304 when not modified since"),
  headerParam("if-range", { type: "string" }, "The Range applies only if this still matches"),
];
const anyContent = { "*/*": {} };
/** What a content GET answers; HEAD answers the same without a body. */
const contentResponses = (redirect: string | undefined, extraErrors: number[], page = false): Responses => ({
  "200": page
    ? {
        description: "The content, with its stored Content-Type and the headers below; or, for a browser navigation without `download`, the share page (HTML, none of the content headers)",
        headers: Object.fromEntries(Object.entries(contentHeaders).map(([name, h]) => [name, { ...h, required: false }])),
        content: anyContent,
      }
    : { description: "The content, with its stored Content-Type", headers: contentHeaders, content: anyContent },
  "206": { description: "The requested range", headers: { ...contentHeaders, "content-range": always("`bytes start-end/size`") }, content: anyContent },
  ...(redirect === undefined ? {} : { "302": { description: redirect, headers: LOCATION } }),
  "304": { description: "Not modified" },
  "416": { description: "Range not satisfiable", headers: { "content-range": always("`bytes */size`") } },
  ...errorsOrPages(400, 404, 429, ...extraErrors, ...SERVER),
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
const listenerPaths: Record<string, PathItem> = {
  // Served by the dispatch (server/dispatch.ts HEALTH_PATH), HEAD too.
  "/healthz": { get: { operationId: "health", summary: "200 while serving", tags: ["service"], security: ANYONE, responses: { ...ok("Health"), ...errors(...SERVER) } } },
  "/{id}": getAndHead("getContent", "A file's content", contentOp()),
  "/{id}/{slug}": getAndHead("getContentWithSlug", "A file's content", { ...contentOp(), parameters: [...contentOp().parameters!, slugParam] }),
  "/s/{token}": getAndHead("getSharedContent", "A shared file's content", {
    tags: ["shares"],
    description:
      "Anyone with the link, whatever the file's visibility. A GET from byte 0 counts as a download; past its limits the link answers 410. A browser navigation (`Accept` with `text/html`, no `download` parameter) gets the share page instead, which counts nothing (CONTRACT §11); `?download=0` is the page's inline preview, `?download=1` its Download button. `?status=1` answers the share's downloads as JSON, `{\"max_downloads\",\"download_count\",\"downloads_left\",\"expire_time\"}`, and counts nothing (CONTRACT §15: what the page's script asks).",
    security: [{}, { sharePassword: [] }, { shareUnlock: [] }],
    parameters: [shareToken, ...contentParams],
    responses: {
      ...contentResponses(undefined, [410], true),
      "401": {
        description: "The share has a password: a form for a browser, else a JSON error with `WWW-Authenticate: Basic`",
        headers: { "www-authenticate": header("`Basic`") },
        content: { ...json(statusSchema(401)), ...html },
      },
    },
  }),
};

const DESCRIPTION = `The REST API of cubby (CONTRACT §2, §3, §5, §8): files, expiry, share links, guest upload links, resumable uploads (tus 1.0.0), content URLs, sign-in and API keys.

Out of scope: the RPC API (gRPC, Connect, gRPC-Web: proto/cubby/v1/files.proto and server reflection), \`/metrics\` (Prometheus text exposition), \`/mcp\` (Model Context Protocol: its tools describe themselves) and the dashboard's static files (\`/\` and its sections' addresses \`/files\`, \`/shares\`, \`/links\`, \`/webhooks\`, \`/keys\`, \`/admin\`, all the same page; \`/app.js\`, \`/app.css\`, \`/assets/…\`, \`/manifest.webmanifest\`, \`/sw.js\`). Any path or method not listed answers 404 (or 400 for a malformed request) with the error body below.

Every failure is \`google.rpc.Status\` JSON, \`{"code": <gRPC code>, "message": "…", "details": []}\`; each error response below fixes its \`code\`.`;

/**
 * Paths the server answers that the document leaves out on purpose (its description says which
 * and why): endpoints with a protocol of their own, and the dashboard's static files.
 */
export const OUT_OF_SCOPE_PATHS: ReadonlySet<string> = new Set(["/metrics", "/mcp", ...Object.keys(staticAssets), ...Object.keys(dashboardPages), ...Object.keys(vendoredAssets)]);

/** An OpenAPI 3.1 document as built here. */
export interface OpenApiDocument {
  openapi: "3.1.0";
  info: Record<string, unknown>;
  security: Record<string, string[]>[];
  tags: { name: string; description: string }[];
  paths: Record<string, PathItem>;
  components: { schemas: Record<string, Schema>; responses: Record<string, ResponseObject>; securitySchemes: Record<string, unknown> };
}

/**
 * The OpenAPI 3.1 document of `app`'s routes (those of {@link OUT_OF_SCOPE_PATHS} aside) and the
 * listener's content routes.
 */
export function openApiDocumentOf(app: AnyElysia): OpenApiDocument {
  const exclude = { methods: [], staticFile: false, paths: [...OUT_OF_SCOPE_PATHS] };
  const generated = toOpenAPISchema(app, exclude, undefined, undefined, "3.1.0").paths as Record<string, PathItem>;
  for (const route of app.routes) {
    const operation = generated[route.path.replace(/:([^/]+)/g, "{$1}")]?.[route.method.toLowerCase() as Method];
    if (operation !== undefined) complete(operation, route.hooks as RouteHooks);
  }
  const paths = { ...generated };
  for (const [path, item] of Object.entries(listenerPaths)) paths[path] = { ...paths[path], ...item };
  return {
    openapi: "3.1.0",
    info: { title: "cubby", version: pkg.version, description: DESCRIPTION, license: { name: "MIT", identifier: "MIT" } },
    security: KEY_OR_SESSION,
    tags: [
      { name: "files", description: "Files and their metadata (CONTRACT §2)" },
      { name: "content", description: "Content URLs (CONTRACT §3)" },
      { name: "folders", description: "Folders and the files in them (CONTRACT §12)" },
      { name: "shares", description: "Share links (CONTRACT §8)" },
      { name: "upload-links", description: "Guest upload links (CONTRACT §8)" },
      { name: "uploads", description: "Resumable uploads, tus 1.0.0 (CONTRACT §8)" },
      { name: "webhooks", description: "Webhooks (CONTRACT §13)" },
      { name: "auth", description: "Sign-in, sessions and API keys (CONTRACT §5)" },
      { name: "service", description: "Health and this document" },
      { name: "dashboard", description: "The installable dashboard's share target (CONTRACT §15)" },
    ],
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components: {
      schemas,
      responses: Object.fromEntries(
        ERROR_STATUSES.map((s) => [`Error${s}`, { description: `HTTP ${s}: \`google.rpc.Status\``, ...errorResponseHeaders(s), content: json(statusSchema(s)) }]),
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
}

/** What of a route's hooks the document reads beside what the generator does. */
interface RouteHooks {
  body?: unknown;
  detail?: Partial<Operation>;
}

/**
 * Completes a generated operation from its route: the generator drops a `detail`'s parameters
 * when the route declares some (the headers it reads itself are only in `detail`), and gives a
 * body read by a parse function of ours no media type (http/inputs.ts's JSON reader accepts
 * `application/json` alone).
 */
function complete(operation: Operation, hooks: RouteHooks): void {
  // A declared parameter's description is its schema's; the Parameter Object is where readers look.
  const declared = (operation.parameters ?? []).map(({ schema: { description, ...schema }, ...parameter }) =>
    description === undefined ? { ...parameter, schema } : { ...parameter, description: description as string, schema },
  );
  const described = (hooks.detail?.parameters ?? []).filter((p: Parameter) => !declared.some((d) => d.name === p.name && d.in === p.in));
  if (declared.length + described.length > 0) operation.parameters = [...declared, ...described];
  if (hooks.body !== undefined) {
    const schema = unwrapSchema(hooks.body as never, undefined, "input", "3.1.0") as Schema;
    const { description } = schema as { description?: string };
    operation.requestBody = {
      required: hooks.detail?.requestBody?.required ?? false,
      ...(description === undefined ? {} : { description }),
      content: json(schema),
    };
  }
}

/** Written once per document: it never changes while the process runs. */
const texts = new WeakMap<OpenApiDocument, string>();

/** The response of `GET /openapi.json`: `document`, cacheable (it changes only with a new version). */
export function openApiResponse(document: OpenApiDocument): Response {
  let text = texts.get(document);
  if (text === undefined) {
    text = JSON.stringify(document);
    texts.set(document, text);
  }
  return new Response(text, {
    headers: {
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(text)),
      "cache-control": "public, max-age=3600",
      "x-content-type-options": "nosniff",
    },
  });
}
