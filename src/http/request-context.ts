/**
 * How the HTTP app's handlers get the request's {@link RequestContext}: the fetch bridge
 * (`server/node-bridge.ts`) attaches it to the `Request` it builds, and Elysia's `derive` hands
 * it to every handler as `requestContext` — one WeakMap lookup per request, no header.
 */
import { Elysia } from "elysia";
import type { RequestLike } from "../auth/principal.ts";
import { createRequestContext, type RequestContext } from "../context/request-context.ts";

const contexts = new WeakMap<Request, RequestContext>();
const NO_PROXIES: ReadonlySet<string> = new Set();

/** Attaches `context` to `request` before the app handles it (the fetch bridge does this). */
export function attachContext(request: Request, context: RequestContext): void {
  contexts.set(request, context);
}

/**
 * The context attached to `request`; for a request that did not come through the listener
 * (the app handled on its own) a new one, with the client address "unknown".
 */
export function contextOf(request: Request): RequestContext {
  let context = contexts.get(request);
  if (context === undefined) {
    const facts = { method: request.method, path: new URL(request.url).pathname, peer: "unknown", forwardedFor: null, requestId: request.headers.get("x-request-id") };
    context = createRequestContext(facts, NO_PROXIES);
    contexts.set(request, context);
  }
  return context;
}

/** The Elysia plugin that derives `requestContext` for every route, and records the route's template in it. */
export const requestContext = new Elysia({ name: "request-context" }).derive({ as: "global" }, ({ request, route }) => {
  const context = contextOf(request);
  context.route = route;
  return { requestContext: context };
});

/** `request` as the Authenticator sees it: method, headers and the client address the listener decided. */
export function authRequest(request: Request, context: RequestContext): RequestLike {
  return { method: request.method, headers: request.headers, clientAddress: context.clientAddress, context };
}
