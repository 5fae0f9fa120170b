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
import { filesRoutes } from "./files-routes.ts";
import { sharesRoutes } from "./shares-routes.ts";
import { errorResponse, json } from "./respond.ts";
import { contextOf, requestContext } from "./request-context.ts";
import { serveStatic } from "./static.ts";
import { guestRoutes } from "./guest-routes.ts";
import { openApiResponse } from "./openapi.ts";
import { tusRoutes } from "./tus-routes.ts";
import { uploadLinksRoutes } from "./upload-links-routes.ts";
import { uploadsRoutes } from "./uploads-routes.ts";
import { usageRoutes } from "./usage-routes.ts";

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
 * Builds the Elysia app serving REST, the dashboard, sign-in and health checks. Content URLs
 * are not routed here: the listener sends them to server/content.ts. The other surfaces are
 * mounted beside it by server/serving.ts: `/mcp` on this app (so its errors render here too),
 * the RPC routes on the listener.
 */
export function createApp(deps: AppDeps) {
  const { services, auth, baseUrl } = deps;

  return new Elysia({ name: "cubby" })
    .use(requestContext)
    .onError(({ code, error, request }) => {
      if (code === "NOT_FOUND") return errorResponse(new AppError("not_found", "not found"));
      if (code === "PARSE" || code === "VALIDATION" || code === "INVALID_COOKIE_SIGNATURE") {
        return errorResponse(new AppError("invalid_argument", "malformed request", { cause: error }));
      }
      // Looked up, not derived: an error can come before derive has run.
      return errorResponse(report(error, contextOf(request)));
    })
    .get("/healthz", () => json({ status: "ok" }), raw)
    .get("/openapi.json", openApiResponse, raw)
    .get("/", () => serveStatic("/")!, raw)
    .get("/app.js", () => serveStatic("/app.js")!, raw)
    .get("/app.css", () => serveStatic("/app.css")!, raw)
    .get("/assets/upload.js", () => serveStatic("/assets/upload.js")!, raw)
    .get("/assets/progress.js", () => serveStatic("/assets/progress.js")!, raw)
    .get("/assets/icon.svg", () => serveStatic("/assets/icon.svg")!, raw)
    .get("/assets/tus.min.js", () => serveStatic("/assets/tus.min.js")!, raw)
    .get("/assets/qrcode.mjs", () => serveStatic("/assets/qrcode.mjs")!, raw)
    .use(
      authRoutes({
        auth,
        signIn: deps.signIn,
        signInLimiter: deps.signInLimiter,
        users: services.users,
        sessions: services.sessions,
        keys: services.keys,
        baseUrl,
        clockMicros: () => services.clock.nowMicros(),
      }),
    )
    .use(filesRoutes({ files: services.files, auth, baseUrl, maxUploadBytes: deps.maxUploadBytes }))
    .use(sharesRoutes({ files: services.files, shares: services.shares, auth, baseUrl }))
    .use(tusRoutes({ uploads: services.uploads, links: services.uploadLinks, auth, baseUrl, maxUploadBytes: deps.maxUploadBytes }))
    .use(uploadsRoutes({ uploads: services.uploads, auth, baseUrl }))
    .use(uploadLinksRoutes({ links: services.uploadLinks, uploads: services.uploads, auth, baseUrl, clockMicros: () => services.clock.nowMicros() }))
    .use(guestRoutes({ links: services.uploadLinks, baseUrl, maxUploadBytes: deps.maxUploadBytes }))
    .use(usageRoutes({ quotas: services.quotas, auth }));
}
