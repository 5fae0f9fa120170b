/**
 * Sign-in through an OpenID Connect provider with openid-client: authorization code flow with
 * PKCE S256, `state` and `nonce` (RFC 9700 §2.1.1, OpenID Connect Core §3.1). The ID token is
 * validated by openid-client (signature, `iss`, `aud`, `exp`, `nonce`); cubby then requires a
 * verified e-mail and applies ALLOWED_DOMAINS.
 *
 * The provider's discovery document is read on first use and cached; a failed discovery is
 * retried on the next sign-in rather than stopping the server.
 */
import * as oidc from "openid-client";
import { AppError } from "../errors.ts";

export interface OidcOptions {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** `{HOSTNAME}/auth/idp/callback`, exactly as registered with the provider. */
  redirectUri: () => string;
  /** Lower-cased domains; empty allows every domain. */
  allowedDomains: string[];
}

/** What the browser keeps (in a short-lived HttpOnly cookie) between login and callback. */
export interface FlowState {
  state: string;
  nonce: string;
  verifier: string;
  next: string;
}

/** A verified identity from the provider. */
export interface Identity {
  issuer: string;
  subject: string;
  email: string;
  /** The `name` claim (OIDC Core §5.1), when the provider sent one: the display name's default (CONTRACT §15). */
  name?: string | undefined;
}

/**
 * Sign-in through one OpenID provider (openid-client): `start` builds the authorization URL with
 * PKCE, state and nonce (RFC 7636, OIDC Core §3.1.2); `finish` checks the callback and returns
 * the verified identity. Failures are AppError codes (see the module comment).
 */
export class OidcSignIn {
  private config: Promise<oidc.Configuration> | undefined;

  constructor(private readonly opts: OidcOptions) {}

  /**
   * The provider's URL to send the browser to, and the state to keep until the callback.
   * @throws AppError unavailable when the provider's discovery document cannot be read
   */
  async start(next: string): Promise<{ url: string; flow: FlowState }> {
    const config = await this.discover();
    const flow: FlowState = {
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      verifier: oidc.randomPKCECodeVerifier(),
      next,
    };
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.opts.redirectUri(),
      scope: "openid email profile",
      response_type: "code",
      code_challenge: await oidc.calculatePKCECodeChallenge(flow.verifier),
      code_challenge_method: "S256",
      state: flow.state,
      nonce: flow.nonce,
    });
    return { url: url.href, flow };
  }

  /**
   * Completes the flow: exchanges the code, validates the ID token, and checks the e-mail.
   * @param search the callback's query string (`?code=…&state=…` or `?error=…`)
   * @throws AppError with a message for the person signing in: permission_denied when the
   *   provider refused or the e-mail may not sign in (unverified, none shared, domain not in
   *   ALLOWED_DOMAINS), invalid_argument when the callback does not complete the flow (state,
   *   nonce, a replayed code…), unavailable when the provider cannot be reached
   */
  async finish(search: string, flow: FlowState): Promise<Identity> {
    const config = await this.discover();
    const params = new URLSearchParams(search);
    if (params.has("error")) {
      throw new AppError("permission_denied", `the identity provider refused: ${params.get("error_description") ?? params.get("error")}`);
    }
    const callback = new URL(this.opts.redirectUri());
    callback.search = search;
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      });
    } catch (err) {
      // oauth4webapi names the claim that failed (nonce, iss, aud…) somewhere down the cause chain.
      let claim: unknown;
      for (let e: unknown = err; e !== null && typeof e === "object" && claim === undefined; e = (e as { cause?: unknown }).cause) {
        claim = (e as { claim?: unknown }).claim;
      }
      const detail = typeof claim === "string" ? ` (ID token claim "${claim}")` : "";
      throw new AppError("invalid_argument", `sign-in could not be completed: ${(err as Error).message}${detail}`, { cause: err });
    }
    const claims = tokens.claims()!;
    let email = typeof claims.email === "string" ? claims.email : undefined;
    let verified = claims.email_verified;
    let name = claims.name;
    if (email === undefined) {
      const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
      email = typeof info.email === "string" ? info.email : undefined;
      verified = info.email_verified;
      name ??= info.name;
    }
    if (email === undefined) throw new AppError("permission_denied", "the identity provider did not share an e-mail address (scope email)");
    if (verified !== true) throw new AppError("permission_denied", `${email} is not verified by the identity provider`);
    const normalized = email.trim().toLowerCase();
    const domain = normalized.slice(normalized.lastIndexOf("@") + 1);
    if (this.opts.allowedDomains.length > 0 && !this.opts.allowedDomains.includes(domain)) {
      throw new AppError("permission_denied", `accounts of ${domain} may not sign in here`);
    }
    return { issuer: claims.iss, subject: claims.sub, email: normalized, name: typeof name === "string" ? name : undefined };
  }

  private discover(): Promise<oidc.Configuration> {
    if (this.config === undefined) {
      const issuer = new URL(this.opts.issuer);
      // openid-client refuses plain http; allow it only for a provider on this machine (tests,
      // or a provider reached through loopback).
      const insecure = issuer.protocol === "http:" && isLoopback(issuer.hostname);
      this.config = oidc
        // client_secret_basic: the method every provider supports by default (openid-client's own default is _post).
        .discovery(issuer, this.opts.clientId, undefined, oidc.ClientSecretBasic(this.opts.clientSecret), insecure ? { execute: [oidc.allowInsecureRequests] } : undefined)
        .catch((err: unknown) => {
          this.config = undefined;
          throw new AppError("unavailable", `the identity provider at ${this.opts.issuer} could not be reached: ${(err as Error).message}`, { cause: err });
        });
    }
    return this.config;
  }
}

function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

/**
 * Where to go after sign-in: only a same-origin relative path (`/x`, not `//host`, `/\host`,
 * or anything with a scheme); anything else becomes `/`. The answer is checked after the URL
 * parser has resolved dot segments too, since `/.//evil.example` resolves to `//evil.example`,
 * which a browser reads as another host (RFC 3986 §4.2 network-path reference).
 */
export function safeNext(raw: string | null): string {
  if (raw === null || !isLocalPath(raw)) return "/";
  try {
    const url = new URL(raw, "http://cubby.invalid");
    const next = url.pathname + url.search + url.hash;
    return url.origin === "http://cubby.invalid" && isLocalPath(next) ? next : "/";
  } catch {
    return "/";
  }
}

/** An absolute path that is not a network-path reference and has no control characters or backslashes. */
function isLocalPath(path: string): boolean {
  return path.startsWith("/") && !path.startsWith("//") && !path.startsWith("/\\") && !/[\x00-\x1F\x7F\\]/.test(path);
}
