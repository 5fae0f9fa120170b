/**
 * The HTTP application (Elysia): one page of routes. Every failure becomes a
 * `google.rpc.Status` JSON response in one place (onError), reported once with the request's
 * context (context/report.ts); the sign-in pages render theirs as HTML (auth-routes.ts).
 */
import { Elysia } from "elysia";
import { report } from "../context/report.ts";
import { AppError } from "../errors.ts";
import type { Authenticator } from "../auth/principal.ts";
import type { OidcSignIn } from "../auth/oidc.ts";
import type { WindowLimiter } from "../auth/rate-limit.ts";
import { authRoutes } from "./auth-routes.ts";
import type { Services } from "../service/index.ts";
import { expiriesRoutes, filesRoutes, thumbnailsRoutes } from "./files-routes.ts";
import { sharesRoutes } from "./shares-routes.ts";
import { foldersRoutes } from "./folders-routes.ts";
import { negotiatedError } from "../serving/pages.ts";
import { errorResponse, json } from "./respond.ts";
import { contextOf, requestContext } from "./request-context.ts";
import { dashboardPages, serveStatic, staticAssets, vendoredAssets } from "./static.ts";
import { guestRoutes } from "./guest-routes.ts";
import { validationMessage } from "./inputs.ts";
import { ANYONE, detail, errors, json as jsonContent, LOCATION, ok, SERVER } from "./describe.ts";
import { openApiDocumentOf, openApiResponse, type OpenApiDocument } from "./openapi.ts";
import { tusRoutes } from "./tus-routes.ts";
import { uploadLinksRoutes } from "./upload-links-routes.ts";
import { uploadsRoutes } from "./uploads-routes.ts";
import { usageRoutes } from "./usage-routes.ts";
import { accountRoutes } from "./account-routes.ts";
import { webhooksRoutes } from "./webhooks-routes.ts";

export interface AppDeps {
  services: Services;
  auth: Authenticator;
  /** Sign-in through the OpenID provider; undefined when not configured. */
  signIn: OidcSignIn | undefined;
  /** Sign-in callbacks per client address and minute. */
  signInLimiter: WindowLimiter;
  /** Public origin (HOSTNAME), known once the server listens. */
  baseUrl: () => string;
  maxUploadBytes: number;
}

const raw = { parse: "none" } as const;

/**
 * GET of every embedded file (static.ts: the dashboard's and the vendored ones) and of the
 * dashboard's section addresses (the page again), each a route of its own, listed once there: a
 * new asset or section needs no route written here.
 */
function assetRoutes() {
  const routes = new Elysia({ name: "asset-routes" });
  for (const pathname of Object.keys({ ...staticAssets, ...dashboardPages, ...vendoredAssets })) routes.get(pathname, async ({ request }) => (await serveStatic(pathname, request.headers))!, raw);
  return routes;
}

/**
 * The dashboard's Web Share Target (web/manifest.webmanifest; CONTRACT §15) when no service
 * worker took the share: a browser that has not installed web/sw.js yet, or has dropped it. The
 * shared files cannot be kept here (no session need come with a share, and nothing would take
 * them to the page), so the body is not read: 303 to the dashboard with `?shared=0`, which says
 * that nothing was kept and to share again.
 */
function shareTargetRoute() {
  return new Elysia({ name: "share-target-route" }).post(
    "/share-target",
    () => new Response(null, { status: 303, headers: { location: "/?shared=0", "cache-control": "no-store" } }),
    {
      ...raw,
      detail: detail({
        operationId: "shareTarget",
        summary: "Where a phone's share sheet sends files for the installed dashboard, when its service worker did not take them: nothing is kept",
        tags: ["dashboard"],
        security: ANYONE,
        requestBody: {
          description: "What the share sheet sends (the manifest's share_target): `files`, `title`, `text`, `url`; not read",
          content: { "multipart/form-data": { schema: { type: "object" } } },
        },
        responses: { "303": { description: "To the dashboard, which says that nothing was kept (`/?shared=0`)", headers: LOCATION }, ...errors(...SERVER) },
      }),
    },
  );
}

/** {@link negotiatedError} as a fetch Response. */
function negotiatedResponse(error: AppError, request: Request, explanation?: string): Response {
  const { status, headers, body } = negotiatedError(error, request.headers.get("accept"), request.method, explanation);
  return new Response(body ?? null, { status, headers });
}

/**
 * Builds the Elysia app serving REST, the dashboard, sign-in and health checks. Content URLs
 * are not routed here: the listener sends them to serving/content.ts. The other surfaces are
 * mounted beside it by process/start-serving.ts: `/mcp` on this app (so its errors render here too),
 * the RPC routes on the listener.
 */
export function createApp(deps: AppDeps) {
  const { services, auth, baseUrl } = deps;

  // normalize: false: a declared body with a field it does not declare is refused, not trimmed.
  return new Elysia({ name: "cubby", normalize: false, strictPath: true })
    .use(requestContext)
    .onError(({ code, error, request }) => {
      // An unknown path: a page for a browser navigation, JSON for a program (CONTRACT §11).
      if (code === "NOT_FOUND") return negotiatedResponse(new AppError("not_found", "not found"), request, "There is nothing at this address. Check the link, or ask whoever sent it for a new one.");
      if (code === "VALIDATION") return errorResponse(new AppError("invalid_argument", validationMessage(error)));
      if (code === "PARSE" || code === "INVALID_COOKIE_SIGNATURE") {
        return errorResponse(new AppError("invalid_argument", "malformed request", { cause: error }));
      }
      // Looked up, not derived: an error can come before derive has run.
      return errorResponse(report(error, contextOf(request)));
    })
    .get("/openapi.json", () => openApiResponse(openApiDocument()), {
      ...raw,
      detail: detail({
        operationId: "openApi",
        summary: "This document",
        tags: ["service"],
        security: ANYONE,
        responses: { "200": { description: "OpenAPI 3.1", content: jsonContent({ type: "object" }) }, ...errors(...SERVER) },
      }),
    })
    .use(assetRoutes())
    .use(shareTargetRoute())
    .use(
      authRoutes({
        auth,
        signIn: deps.signIn,
        signInLimiter: deps.signInLimiter,
        users: services.users,
        sessions: services.sessions,
        loginLinks: services.loginLinks,
        keys: services.keys,
        baseUrl,
        clockMicros: () => services.clock.nowMicros(),
      }),
    )
    .use(filesRoutes({ files: services.files, thumbnails: services.thumbnails, auth, baseUrl, maxUploadBytes: deps.maxUploadBytes }))
    .use(thumbnailsRoutes({ files: services.files, thumbnails: services.thumbnails, auth }))
    .use(expiriesRoutes({ files: services.files, auth }))
    .use(foldersRoutes({ folders: services.folders, auth, baseUrl }))
    .use(sharesRoutes({ files: services.files, shares: services.shares, auth, baseUrl }))
    .use(tusRoutes({ uploads: services.uploads, links: services.uploadLinks, auth, baseUrl, maxUploadBytes: deps.maxUploadBytes }))
    .use(uploadsRoutes({ uploads: services.uploads, auth, baseUrl }))
    .use(uploadLinksRoutes({ links: services.uploadLinks, uploads: services.uploads, auth, baseUrl, clockMicros: () => services.clock.nowMicros() }))
    .use(guestRoutes({ links: services.uploadLinks, baseUrl, maxUploadBytes: deps.maxUploadBytes }))
    .use(usageRoutes({ quotas: services.quotas, auth }))
    .use(accountRoutes({ users: services.users, userAdmin: services.userAdmin, auth }))
    .use(webhooksRoutes({ webhooks: services.webhooks, auth }));
}

/**
 * Dependencies of an app built only to be described: the routes are declared, never called, so
 * nothing of a service is used; a call fails loudly rather than quietly doing nothing.
 */
const DESCRIBE_ONLY: AppDeps = new Proxy(function describeOnly() {}, {
  get: (_target, key) => (key === "then" ? undefined : DESCRIBE_ONLY),
  apply: () => {
    throw new Error("an app built to describe the API was asked to serve");
  },
}) as unknown as AppDeps;

let document: OpenApiDocument | undefined;

/**
 * The OpenAPI document of the HTTP app (GET /openapi.json; http/openapi.ts): generated once per
 * process from the routes, the same for every server since no route's declaration depends on
 * its dependencies.
 */
export function openApiDocument(): OpenApiDocument {
  document ??= openApiDocumentOf(createApp(DESCRIBE_ONLY));
  return document;
}
