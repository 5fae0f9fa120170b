/**
 * Sign-in, sessions and API-key management (CONTRACT §5): `/auth/login`, the provider's
 * redirect back to `/auth/idp/callback`, `/auth/logout`, `/auth/session`, and `/auth/keys`
 * (session only: a bearer key cannot mint or list keys).
 */
import { parse as parseCookies, serialize as serializeCookie } from "cookie";
import { Elysia } from "elysia";
import { AppError } from "../errors.ts";
import { formatExpiry } from "../domain/expiry.ts";
import { formatTimestamp } from "../domain/time.ts";
import { parseQuery } from "../domain/params.ts";
import { safeNext, type FlowState, type OidcSignIn } from "../auth/oidc.ts";
import { sessionCookieName, type Authenticator } from "../auth/principal.ts";
import type { WindowLimiter } from "../auth/rate-limit.ts";
import type { RequestContext } from "../context/request-context.ts";
import { report } from "../context/report.ts";
import type { ApiKeyInfo, KeyService } from "../service/keys.ts";
import type { LoginLinkService } from "../service/login-links.ts";
import type { SessionService } from "../service/sessions.ts";
import type { UserService } from "../service/users.ts";
import { onlyFields, optionalString, readJsonObject } from "./json-body.ts";
import { json } from "./respond.ts";
import { errorPage } from "./pages.ts";
import { authRequest, requestContext } from "./request-context.ts";

export interface AuthRoutesDeps {
  auth: Authenticator;
  /** undefined when IDP_CLIENT_ID / IDP_CLIENT_SECRET are not set. */
  signIn: OidcSignIn | undefined;
  /** Limits sign-in callbacks per client address. */
  signInLimiter: WindowLimiter;
  users: UserService;
  sessions: SessionService;
  /** One-time sign-in links (`cubby login-link`, CONTRACT §11). */
  loginLinks: LoginLinkService;
  keys: KeyService;
  baseUrl: () => string;
  clockMicros: () => number;
}

/** The login flow cookie lives this long: enough to type a password, not to be replayed later. */
const FLOW_MAX_AGE_SECONDS = 600;
const MAX_KEY_BODY_BYTES = 4096;

const raw = { parse: "none" } as const;

const NOT_CONFIGURED =
  "This cubby has no identity provider yet. To sign in now, run on the server: cubby login-link --email you@example.com, and open the link it prints. To sign in with a provider, set IDP_CLIENT_ID and IDP_CLIENT_SECRET (and IDP_ISSUER for a provider other than Google). Scripts can use an API key: cubby keys create --email you@example.com";

/**
 * The /auth routes as an Elysia plugin. Failures of /auth/keys and /auth/logout are
 * `google.rpc.Status` JSON; sign-in outcomes meant for a person are HTML pages.
 * Longer than 60 lines on purpose: one page of routes (as picoshare's routes.go), a chain of
 * short route definitions sharing the cookie helpers above; the steps with logic of their own are
 * functions below (signInPage, readFlow, readKeyName).
 */
export function authRoutes(deps: AuthRoutesDeps) {
  const secure = () => deps.baseUrl().startsWith("https:");
  const flowCookieName = () => (secure() ? "__Host-cubby_oidc" : "cubby_oidc");
  const cookie = (name: string, value: string, maxAgeSeconds: number) =>
    serializeCookie(name, value, { httpOnly: true, sameSite: "lax", path: "/", secure: secure(), maxAge: maxAgeSeconds });
  const sessionCookie = (token: string, expiresAtMicros: number) =>
    cookie(sessionCookieName(deps.baseUrl()), token, Math.max(0, Math.floor((expiresAtMicros - deps.clockMicros()) / 1_000_000)));

  /**
   * Without a provider, sign-in does not exist on this server: 404, not 503, since nothing is
   * down and monitoring that pages on 5xx must not wake for a dashboard visit (docs/design.md,
   * "Choices").
   */
  const provider = (): OidcSignIn => {
    if (deps.signIn === undefined) throw new AppError("not_found", NOT_CONFIGURED);
    return deps.signIn;
  };

  return new Elysia({ name: "auth-routes", prefix: "/auth" })
    .use(requestContext)
    .get(
      "/login",
      ({ request, requestContext }) => {
        const title = deps.signIn === undefined ? "Sign-in is not configured" : "Sign-in is unavailable";
        return signInPage(title, requestContext, {}, async () => {
          const next = safeNext(parseQuery(new URL(request.url).search, ["next"]).get("next") ?? null);
          const { url, flow } = await provider().start(next);
          const value = Buffer.from(JSON.stringify(flow)).toString("base64url");
          return new Response(null, { status: 302, headers: { location: url, "set-cookie": cookie(flowCookieName(), value, FLOW_MAX_AGE_SECONDS), "cache-control": "no-store" } });
        });
      },
      raw,
    )
    .get(
      "/idp/callback",
      ({ request, requestContext }) =>
        // Whatever the outcome, the flow cookie has done its job.
        signInPage("Sign-in refused", requestContext, { "set-cookie": cookie(flowCookieName(), "", 0) }, async () => {
          const signIn = provider();
          const address = requestContext.clientAddress;
          // Charged before the exchange with the provider, and kept: every callback counts.
          const reservation = await deps.signInLimiter.reserve(address);
          if (!reservation.ok) {
            const wait = reservation.retryAfterSeconds;
            throw new AppError("resource_exhausted", `too many sign-in attempts from this address; try again in ${wait} s`, { retryAfterSeconds: wait });
          }
          const flow = readFlow(request.headers.get("cookie"), flowCookieName());
          if (flow === undefined) throw new AppError("invalid_argument", "the sign-in took too long or was started in another browser; please start again");
          const identity = await signIn.finish(new URL(request.url).search, flow);
          const user = await deps.users.findOrCreateByIdentity(identity);
          const session = await deps.sessions.create(user.id);
          const headers = new Headers({ location: safeNext(flow.next), "cache-control": "no-store" });
          headers.append("set-cookie", sessionCookie(session.token, session.expiresAt));
          return new Response(null, { status: 302, headers });
        }),
      raw,
    )
    .get(
      "/link/:token",
      ({ params, requestContext }) =>
        signInPage("Sign-in link refused", requestContext, {}, async () => {
          // Counted like a sign-in callback, before the lookup and kept: guessing costs a window.
          const reservation = await deps.signInLimiter.reserve(requestContext.clientAddress);
          if (!reservation.ok) {
            const wait = reservation.retryAfterSeconds;
            throw new AppError("resource_exhausted", `too many sign-in attempts from this address; try again in ${wait} s`, { retryAfterSeconds: wait });
          }
          const user = await deps.loginLinks.redeem(params.token);
          const session = await deps.sessions.create(user.id);
          const headers = new Headers({ location: "/", "cache-control": "no-store", "referrer-policy": "no-referrer" });
          headers.append("set-cookie", sessionCookie(session.token, session.expiresAt));
          return new Response(null, { status: 302, headers });
        }),
      raw,
    )
    .post(
      "/logout",
      async ({ request, requestContext }) => {
        const session = await deps.auth.requireSession(authRequest(request, requestContext));
        await deps.sessions.revoke(session.token);
        return json({}, 200, { "set-cookie": cookie(sessionCookieName(deps.baseUrl()), "", 0) });
      },
      raw,
    )
    .get(
      "/session",
      async ({ request, requestContext }) => {
        // A rate-limited address gets 429 like every other surface, not "signed out".
        const session = await deps.auth.optionalSession(authRequest(request, requestContext));
        const body = {
          sign_in_configured: deps.signIn !== undefined,
          signed_in: session !== null,
          email: session === null ? "" : ((await deps.users.emailOf(session.principal.userId)) ?? ""),
        };
        // The dashboard asks on every load: the right moment to send a renewed session cookie.
        const renewed: Record<string, string> =
          session?.renewedUntil === undefined ? {} : { "set-cookie": sessionCookie(session.token, session.renewedUntil) };
        return json(body, 200, renewed);
      },
      raw,
    )
    .post(
      "/keys",
      async ({ request, requestContext }) => {
        const { principal } = await deps.auth.requireSession(authRequest(request, requestContext));
        const body = await readKeyBody(request);
        const minted = await deps.keys.create(principal.userId, body.name, deps.keys.options(body));
        return json({ ...keyJson(minted), key: minted.key });
      },
      raw,
    )
    .get(
      "/keys",
      async ({ request, requestContext }) => {
        const { principal } = await deps.auth.requireSession(authRequest(request, requestContext));
        return json({
          keys: (await deps.keys.list(principal.userId)).map(keyJson),
        });
      },
      raw,
    )
    .delete(
      "/keys/:id",
      async ({ request, params, requestContext }) => {
        const { principal } = await deps.auth.requireSession(authRequest(request, requestContext));
        await deps.keys.revoke(params.id, principal.userId);
        return json({});
      },
      raw,
    );
}

/**
 * Runs one step of sign-in, whose answer is for a person: the response of `step`, or for any
 * error an HTML page (errors.ts decides the status) under `title`. Either carries `headers`.
 * The error is reported once (context/report.ts).
 */
async function signInPage(title: string, context: RequestContext, headers: Record<string, string>, step: () => Promise<Response>): Promise<Response> {
  let response: Response;
  try {
    response = await step();
  } catch (err) {
    response = errorPage(title, report(err, context));
  }
  for (const [name, value] of Object.entries(headers)) response.headers.append(name, value);
  return response;
}

/** The flow state from its cookie, or undefined when missing or malformed. */
function readFlow(cookieHeader: string | null, name: string): FlowState | undefined {
  const value = cookieHeader === null ? undefined : parseCookies(cookieHeader)[name];
  if (value === undefined) return undefined;
  try {
    const flow = JSON.parse(Buffer.from(value, "base64url").toString("utf8")) as FlowState;
    if ([flow.state, flow.nonce, flow.verifier, flow.next].every((v) => typeof v === "string")) return flow;
  } catch {
    // fall through
  }
  return undefined;
}

/** A key as /auth/keys answers: never its secret; `expire_time` "" for never (CONTRACT §8). */
function keyJson(k: ApiKeyInfo) {
  return {
    id: k.id,
    name: k.name,
    scopes: k.scopes,
    expire_time: formatExpiry(k.expiresAt),
    created_at: formatTimestamp(k.createdAt),
    last_used_at: k.lastUsedAt === null ? null : formatTimestamp(k.lastUsedAt),
  };
}

/**
 * The optional body of POST /auth/keys: `{"name", "scopes": ["files.read", …], "expire_time" |
 * "ttl"}`, every field optional (CONTRACT §8).
 */
async function readKeyBody(request: Request): Promise<{ name: string; scopes: string[] | undefined; expire_time: string | undefined; ttl: string | undefined }> {
  const body = await readJsonObject(request, { maxBytes: MAX_KEY_BODY_BYTES, emptyIsObject: true, what: "the key's settings" });
  onlyFields(body, KEY_FIELDS);
  const scopes = body.scopes;
  if (scopes !== undefined && (!Array.isArray(scopes) || !scopes.every((s) => typeof s === "string"))) {
    throw new AppError("invalid_argument", 'scopes: expected a list of scope names, e.g. ["files.read"]');
  }
  return { name: optionalString(body, "name") ?? "", scopes, expire_time: optionalString(body, "expire_time"), ttl: optionalString(body, "ttl") };
}

const KEY_FIELDS = new Set(["name", "scopes", "expire_time", "ttl"]);
