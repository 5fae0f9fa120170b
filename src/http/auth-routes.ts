/**
 * Sign-in, sessions and API-key management (CONTRACT §5): `/auth/login`, the provider's
 * redirect back to `/auth/idp/callback`, login links (`GET /auth/link/{token}` shows who it signs
 * in; its page's button, `POST /auth/link`, signs in: CONTRACT §11), `/auth/logout`,
 * `/auth/session`, and `/auth/keys` (session only: a bearer key cannot mint or list keys).
 */
import { parse as parseCookies, serialize as serializeCookie } from "cookie";
import { Elysia, t } from "elysia";
import { AppError } from "../errors.ts";
import { formatExpiry } from "../domain/expiry.ts";
import { formatTimestamp } from "../domain/time.ts";
import { DEFAULT_PAGE_SIZE, nextPageField, parseQuery } from "../domain/params.ts";
import { safeNext, type FlowState, type OidcSignIn } from "../auth/oidc.ts";
import { sessionCookieName, type Authenticator } from "../auth/principal.ts";
import type { WindowLimiter } from "../auth/rate-limit.ts";
import type { RequestContext } from "../context/request-context.ts";
import { report } from "../context/report.ts";
import type { ApiKeyInfo, KeyService } from "../service/keys.ts";
import type { LoginLinkService } from "../service/login-links.ts";
import type { SessionService } from "../service/sessions.ts";
import type { UserService } from "../service/users.ts";
import { parseScopes, SCOPES } from "../domain/principal.ts";
import { ANYONE, AUTH, detail, errors, html, htmlErrors, LOCATION, ok, queryParam, SERVER, SESSION, type Responses } from "./describe.ts";
import { booleanOf, bodyString, checked, closedBody, expiryFields, jsonBody, pagingQuery, strictQuery } from "./inputs.ts";
import { json } from "./respond.ts";
import { readBounded } from "./json-body.ts";
import { errorPage, loginLinkPage, recipientSignInPage } from "../serving/pages.ts";
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

/** The path parameter of a login link's URL. */
const LINK_TOKEN = { name: "token", in: "path" as const, required: true, schema: { type: "string" as const }, description: "The link's token, as `cubby login-link` printed it" };

/** The login flow cookie lives this long: enough to type a password, not to be replayed later. */
const FLOW_MAX_AGE_SECONDS = 600;
const MAX_KEY_BODY_BYTES = 4096;

/**
 * The optional body of POST /auth/keys: `{"name", "scopes": ["files.read", …], "expire_time" |
 * "ttl"}`, every field optional (CONTRACT §8); the scopes and the expiry are decided by the key
 * service.
 */
const newKeyBody = jsonBody(
  closedBody(
    {
      name: t.Optional(bodyString("name", { description: "For you to tell keys apart" })),
      scopes: t.Optional(
        checked({ type: "array", items: { type: "string", enum: [...SCOPES] }, minItems: 1, description: "Default: all" }, (raw) => {
          if (!Array.isArray(raw) || !raw.every((s) => typeof s === "string")) {
            throw new AppError("invalid_argument", 'scopes: expected a list of scope names, e.g. ["files.read"]');
          }
          parseScopes(raw);
          return raw as string[];
        }),
      ),
      ...expiryFields,
      s3: t.Optional(checked({ type: "boolean", description: "An S3 access key (CONTRACT §16) instead of an API key" }, booleanOf("s3"))),
    },
    "Every field optional; default scopes: all",
  ),
  { maxBytes: MAX_KEY_BODY_BYTES, emptyIsObject: true, what: "the key's settings" },
);

/** A route of the signed-in dashboard's session (a bearer key cannot mint or list keys). */
const sessionOp = (operationId: string, summary: string, responses: Responses) =>
  detail({ operationId, summary, tags: ["auth"], security: SESSION, responses: { ...responses, ...errors(400, ...AUTH) } });

const NOT_CONFIGURED =
  "This cubby has no identity provider yet. To sign in now, run on the server: cubby login-link --email you@example.com, and open the link it prints. To sign in with a provider, set IDP_CLIENT_ID and IDP_CLIENT_SECRET (and IDP_ISSUER for a provider other than Google). Scripts can use an API key: cubby keys create --email you@example.com";

/**
 * The /auth routes as an Elysia plugin. Failures of /auth/keys and /auth/logout are
 * `google.rpc.Status` JSON; sign-in outcomes meant for a person are HTML pages.
 * Longer than 60 lines on purpose: one page of routes (as picoshare's routes.go), a chain of
 * short route definitions sharing the cookie helpers above; the steps with logic of their own are
 * functions below (signInPage, readFlow).
 */
export function authRoutes(deps: AuthRoutesDeps) {
  const secure = () => deps.baseUrl().startsWith("https:");
  const flowCookieName = () => (secure() ? "__Host-cubby_oidc" : "cubby_oidc");
  const cookie = (name: string, value: string, maxAgeSeconds: number) =>
    serializeCookie(name, value, { httpOnly: true, sameSite: "lax", path: "/", secure: secure(), maxAge: maxAgeSeconds });
  const sessionCookie = (token: string, expiresAtMicros: number) =>
    cookie(sessionCookieName(deps.baseUrl()), token, Math.max(0, Math.floor((expiresAtMicros - deps.clockMicros()) / 1_000_000)));

  /**
   * Signs `userId` in: a new session, its cookie, and a redirect to `location` (a same-origin
   * path): 302 for the provider's callback (a GET), 303 after a POST (RFC 9110 §15.4.4). Never
   * cached; no Referer leaves with the token-bearing URL this answers.
   */
  const startSession = async (userId: string, location: string, status: 302 | 303 = 302): Promise<Response> => {
    const session = await deps.sessions.create(userId);
    const headers = new Headers({ location, "cache-control": "no-store", "referrer-policy": "no-referrer" });
    headers.append("set-cookie", sessionCookie(session.token, session.expiresAt));
    return new Response(null, { status, headers });
  };

  /**
   * Without a provider, sign-in does not exist on this server: 404, not 503, since nothing is
   * down and monitoring that pages on 5xx must not wake for a dashboard visit (docs/design.md,
   * "Choices").
   */
  const provider = (): OidcSignIn => {
    if (deps.signIn === undefined) throw new AppError("not_found", NOT_CONFIGURED);
    return deps.signIn;
  };

  /**
   * A login link opened (GET or HEAD): the page naming who it signs in, or the error page.
   * Counted like a sign-in, before the lookup, so guessing tokens costs a window; looking at a
   * valid link is given back, so previews and a second look cost the person nothing.
   */
  const showLink = ({ params, requestContext }: { params: { token: string }; requestContext: RequestContext }) =>
    signInPage("Sign-in link refused", requestContext, {}, async () => {
      const reservation = await reserveSignIn(deps.signInLimiter, requestContext.clientAddress);
      const { email } = await deps.loginLinks.look(params.token);
      await reservation.refund();
      return loginLinkPage(email, params.token);
    });

  return new Elysia({ name: "auth-routes", prefix: "/auth" })
    .use(requestContext)
    .get(
      "/login",
      ({ request, requestContext }) => {
        const title = deps.signIn === undefined ? "Sign-in is not configured" : "Sign-in is unavailable";
        return signInPage(title, requestContext, {}, async () => {
          const next = safeNext(parseQuery(new URL(request.url).search, ["next"]).get("next") ?? null);
          // Sent here by a file's link (CONTRACT §3): a recipient, not the operator (CONTRACT §15).
          if (deps.signIn === undefined && next !== "/") return recipientSignInPage();
          const { url, flow } = await provider().start(next);
          const value = Buffer.from(JSON.stringify(flow)).toString("base64url");
          return new Response(null, { status: 302, headers: { location: url, "set-cookie": cookie(flowCookieName(), value, FLOW_MAX_AGE_SECONDS), "cache-control": "no-store" } });
        });
      },
      {
        parse: "none",
        // Its query is read by the handler: a refusal here is a page for a person, not JSON.
        detail: detail({
          operationId: "signIn",
          summary: "Start signing in at the identity provider",
          tags: ["auth"],
          security: ANYONE,
          parameters: [queryParam("next", { type: "string" }, "Same-origin path to return to")],
          responses: { "302": { description: "To the provider", headers: LOCATION }, ...htmlErrors(400, 401, 404, 429, ...SERVER) },
        }),
      },
    )
    .get(
      "/idp/callback",
      ({ request, requestContext }) =>
        // Whatever the outcome, the flow cookie has done its job.
        signInPage("Sign-in refused", requestContext, { "set-cookie": cookie(flowCookieName(), "", 0) }, async () => {
          const signIn = provider();
          // Charged before the exchange with the provider, and kept: every callback counts.
          await chargeSignIn(deps.signInLimiter, requestContext.clientAddress);
          const flow = readFlow(request.headers.get("cookie"), flowCookieName());
          if (flow === undefined) throw new AppError("invalid_argument", "the sign-in took too long or was started in another browser; please start again");
          const identity = await signIn.finish(new URL(request.url).search, flow);
          const user = await deps.users.findOrCreateByIdentity(identity);
          return startSession(user.id, safeNext(flow.next));
        }),
      {
        parse: "none",
        detail: detail({
          operationId: "signInCallback",
          summary: "The provider's redirect back: starts a session",
          tags: ["auth"],
          security: ANYONE,
          parameters: [queryParam("code", { type: "string" }, "Authorization code"), queryParam("state", { type: "string" }, "Flow state")],
          responses: { "302": { description: "Signed in: to `next` with a session cookie", headers: LOCATION }, ...htmlErrors(400, 401, 403, 404, 429, ...SERVER) },
        }),
      },
    )
    .get("/link/:token", showLink, {
      parse: "none",
      // Any token is looked up (an unknown one is a 404 page): no schema, whose 400 would be JSON.
      detail: detail({
        operationId: "showLoginLink",
        summary: "Open a one-time sign-in link (`cubby login-link`): a page naming the account, with a Sign in button (uses nothing up)",
        tags: ["auth"],
        security: ANYONE,
        parameters: [LINK_TOKEN],
        responses: { "200": { description: "Who the link signs in, and the button that does it", content: html }, ...htmlErrors(403, 404, 410, 429, ...SERVER) },
      }),
    })
    // Link previews of chat and mail often send HEAD: the same answer, without its body.
    .head("/link/:token", showLink, {
      parse: "none",
      detail: detail({
        operationId: "showLoginLinkHead",
        summary: "The headers of a login link's page (uses nothing up)",
        tags: ["auth"],
        security: ANYONE,
        parameters: [LINK_TOKEN],
        responses: { "200": { description: "Who the link signs in (the page's headers)" }, ...htmlErrors(403, 404, 410, 429, ...SERVER) },
      }),
    })
    .post(
      "/link",
      ({ request, requestContext }) =>
        signInPage("Sign-in link refused", requestContext, {}, async () => {
          if (isCrossOrigin(request.headers, deps.baseUrl())) {
            throw new AppError("permission_denied", "cross-origin request refused: a sign-in link is used by the Sign in button of its own page");
          }
          const token = await readTokenForm(request);
          // Counted before the lookup and kept, whatever the outcome.
          await chargeSignIn(deps.signInLimiter, requestContext.clientAddress);
          const user = await deps.loginLinks.redeem(token);
          return startSession(user.id, "/", 303);
        }),
      {
        parse: "none",
        detail: detail({
          operationId: "signInWithLink",
          summary: "The Sign in button of a login link's page: uses the link up and starts a session",
          tags: ["auth"],
          security: ANYONE,
          requestBody: {
            required: true,
            content: { "application/x-www-form-urlencoded": { schema: { type: "object", properties: { token: { type: "string" } }, required: ["token"] } } },
          },
          responses: { "303": { description: "Signed in: to the dashboard with a session cookie", headers: LOCATION }, ...htmlErrors(400, 403, 404, 410, 415, 429, ...SERVER) },
        }),
      },
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
      {
        parse: "none",
        detail: detail({
          operationId: "getSession",
          summary: "Who is signed in (the dashboard asks on load)",
          tags: ["auth"],
          security: [{}, { session: [] }],
          responses: { ...ok("Session"), ...errors(400, 429, ...SERVER) },
        }),
      },
    )
    .use(sessionRoutes(deps, cookie));
}

/**
 * The routes of a signed-in dashboard's session: /auth/logout and /auth/keys (a bearer key cannot
 * mint or list keys). Their own plugin, so that its authentication (`derive`) runs for them alone.
 */
function sessionRoutes(deps: AuthRoutesDeps, cookie: (name: string, value: string, maxAgeSeconds: number) => string) {
  return new Elysia({ name: "session-routes" })
    .use(requestContext)
    .derive(async ({ request, requestContext }) => ({ session: await deps.auth.requireSession(authRequest(request, requestContext)) }))
    .post(
      "/logout",
      async ({ session }) => {
        await deps.sessions.revoke(session.token);
        return json({}, 200, { "set-cookie": cookie(sessionCookieName(deps.baseUrl()), "", 0) });
      },
      { parse: "none", detail: sessionOp("signOut", "End the session", ok("Empty")) },
    )
    .post(
      "/keys",
      async ({ session, body }) => {
        if (body.s3 === true) {
          const minted = await deps.keys.createS3(session.principal.userId, body.name ?? "", deps.keys.options(body));
          return json({ ...keyJson(minted), secret_access_key: minted.secretAccessKey });
        }
        const minted = await deps.keys.create(session.principal.userId, body.name ?? "", deps.keys.options(body));
        return json({ ...keyJson(minted), key: minted.key });
      },
      { ...newKeyBody, detail: sessionOp("createApiKey", "Mint an API key (the secret is shown this once)", { ...ok("NewApiKey"), ...errors(415) }) },
    )
    .get(
      "/keys",
      async ({ session, query }) => {
        const page = await deps.keys.list(session.principal.userId, query.page_size ?? DEFAULT_PAGE_SIZE, query.page_token);
        return json({ keys: page.items.map(keyJson), ...nextPageField(page) });
      },
      { ...strictQuery(pagingQuery), detail: sessionOp("listApiKeys", "The user's API keys (never their secrets), newest first", { ...ok("ApiKeyList"), ...errors(400) }) },
    )
    .delete(
      "/keys/:id",
      async ({ session, params }) => {
        await deps.keys.revoke(params.id, session.principal.userId);
        return json({});
      },
      {
        params: t.Object({ id: t.String({ description: "Key ID" }) }),
        parse: "none",
        detail: sessionOp("revokeApiKey", "Revoke an API key", { ...ok("Empty"), ...errors(404) }),
      },
    );
}

/**
 * Counts one sign-in attempt (a provider's callback, a login link opened or used) against the
 * address's window (RATE_LIMIT_SIGN_INS), kept whatever the outcome.
 * @throws AppError resource_exhausted (429, with Retry-After) past the limit
 */
async function chargeSignIn(limiter: WindowLimiter, address: string): Promise<void> {
  await reserveSignIn(limiter, address);
}

/**
 * {@link chargeSignIn}, with the means to give the attempt back (`refund`) when it turns out to
 * cost nothing worth limiting.
 * @throws AppError resource_exhausted (429, with Retry-After) past the limit
 */
async function reserveSignIn(limiter: WindowLimiter, address: string): Promise<{ refund: () => Promise<void> }> {
  const reservation = await limiter.reserve(address);
  if (reservation.ok) return reservation;
  const wait = reservation.retryAfterSeconds;
  throw new AppError("resource_exhausted", `too many sign-in attempts from this address; try again in ${wait} s`, { retryAfterSeconds: wait });
}

/** A login link's form body is one token (43 characters) and a name: a little room, no more. */
const MAX_LINK_FORM_BYTES = 1024;

/**
 * The token of a login link's form (`token=…`, `application/x-www-form-urlencoded`, as the
 * page's form and `curl -d token=…` send it).
 * @throws AppError unsupported_media_type for another body type; invalid_argument for a body
 *   over {@link MAX_LINK_FORM_BYTES}, without a token, or with two
 */
async function readTokenForm(request: Request): Promise<string> {
  const type = request.headers.get("content-type") ?? "";
  if (!/^application\/x-www-form-urlencoded\s*(;|$)/i.test(type)) {
    throw new AppError("unsupported_media_type", "send the sign-in link's token as a form: application/x-www-form-urlencoded, token=…");
  }
  const token = parseQuery(await readBounded(request, MAX_LINK_FORM_BYTES), ["token"]).get("token");
  if (token === undefined) throw new AppError("invalid_argument", "the form has no token (token=…, the last part of the link)");
  return token;
}

/**
 * Whether a request comes from another site's page, by what browsers say of it: its
 * `Sec-Fetch-Site` when sent (Fetch Metadata; only `same-origin` is ours), else its `Origin`
 * when sent (anything but cubby's public origin, `null` included). A request with neither did
 * not come from a browser's form or script (every current browser sends `Origin` with a POST,
 * Fetch §3.1 "append a request Origin header"), so it is a program's, e.g. curl, and not
 * cross-site. Note that cubby's page, sent with `Referrer-Policy: no-referrer`, makes a browser
 * send `Origin: null` on its own form's POST: `Sec-Fetch-Site: same-origin` then decides.
 * As Hono's csrf middleware and auth/principal.ts (for session cookies), save that a program
 * without `Origin` is let through: a login link's token is itself the credential.
 */
function isCrossOrigin(headers: Headers, baseUrl: string): boolean {
  const site = headers.get("sec-fetch-site");
  if (site !== null) return site !== "same-origin";
  const origin = headers.get("origin");
  return origin !== null && origin !== new URL(baseUrl).origin;
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

/** A key as /auth/keys answers: never its secret; `expire_time` "" for never (CONTRACT §8); an S3 access key's `access_key_id` (§16). */
function keyJson(k: ApiKeyInfo) {
  return {
    ...(k.s3AccessKeyId === null ? {} : { access_key_id: k.s3AccessKeyId }),
    id: k.id,
    name: k.name,
    scopes: k.scopes,
    expire_time: formatExpiry(k.expiresAt),
    created_at: formatTimestamp(k.createdAt),
    last_used_at: k.lastUsedAt === null ? null : formatTimestamp(k.lastUsedAt),
  };
}
