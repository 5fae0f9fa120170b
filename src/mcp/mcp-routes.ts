/**
 * `/mcp`: a Model Context Protocol server (CONTRACT §9) over Streamable HTTP
 * (https://modelcontextprotocol.io/specification/2025-06-18/basic/transports#streamable-http),
 * built on the official SDK's fetch-style transport.
 *
 * Stateless: every POST gets a new server and transport that live only for that request (no
 * `Mcp-Session-Id`, JSON responses rather than SSE streams), so any instance behind a load
 * balancer can answer any request and nothing is kept between them. GET (the server-to-client
 * SSE stream) and DELETE (ending a session) have nothing to serve and answer 405, as the SDK's
 * stateless examples do; its client takes 405 to mean "no stream".
 *
 * Authentication is `Authorization: Bearer <API key>` only: the dashboard's session cookie is not
 * looked at (agents have keys, and without cookies a cross-site page cannot act as a signed-in
 * user, so no Origin check is needed). A missing, unknown, revoked or expired key gets 401 with
 * `WWW-Authenticate` before the transport reads the body; the key's scopes (CONTRACT §8) apply
 * to each tool as on REST.
 */
import { Elysia } from "elysia";
import type { Authenticator } from "../auth/principal.ts";
import type { RequestContext } from "../context/request-context.ts";
import type { Principal } from "../domain/principal.ts";
import { AppError } from "../errors.ts";
import { authRequest, requestContext } from "../http/request-context.ts";
import { json } from "../http/respond.ts";
import type { FileToolsDeps } from "./tools.ts";

export interface McpRoutesDeps extends FileToolsDeps {
  auth: Authenticator;
}

const raw = { parse: "none" } as const;

/** The `/mcp` route as an Elysia plugin. */
export function mcpRoutes(deps: McpRoutesDeps) {
  return new Elysia({ name: "mcp-routes" }).use(requestContext).all(
    "/mcp",
    async ({ request, requestContext }) => {
      const principal = await bearerPrincipal(deps.auth, request, requestContext);
      if (request.method !== "POST") {
        return json({ jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed: this stateless server takes POST only" }, id: null }, 405, { allow: "POST" });
      }
      // The SDK (with zod, ajv, hono) loads on the first call: ~15 MB a server that is never
      // asked over MCP does not hold (idle RSS 95 → 84 MB here).
      const { handleMcpPost } = await import("./mcp-post.ts");
      return handleMcpPost(deps, request, { principal, context: requestContext });
    },
    raw,
  );
}

/**
 * The caller of an `/mcp` request, by bearer API key only.
 * @throws AppError unauthenticated (401, WWW-Authenticate) without an Authorization header, or
 *   with a key that is unknown, revoked or expired; resource_exhausted (429) when the client
 *   address has failed too often (auth/principal.ts)
 */
async function bearerPrincipal(auth: Authenticator, request: Request, context: RequestContext): Promise<Principal> {
  if (request.headers.get("authorization") === null) {
    throw new AppError("unauthenticated", "missing credentials: send Authorization: Bearer <API key> (/mcp takes API keys, not sign-in cookies)");
  }
  return auth.require(authRequest(request, context));
}
