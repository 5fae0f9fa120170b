/**
 * The request context: what the server decided about one request before any handler runs,
 * created once per request by the listener (`server/dispatch.ts`) and handed down explicitly —
 * to the HTTP app by Elysia's `derive` (`http/request-context.ts`), to Connect handlers by a
 * context key (`rpc/request-context.ts`), to content URLs (serving/content.ts) on the exchange. Nothing in it
 * travels as a request header.
 */
import { clientAddressOf } from "./client-address.ts";
import { requestIdFrom } from "./request-id.ts";

export interface RequestContext {
  /** Echoed as `X-Request-Id`, printed in the access log and with every reported error. */
  readonly requestId: string;
  /** The address the request is attributed to (rate limits, logs); see client-address.ts. */
  readonly clientAddress: string;
  /** The request method, as sent. */
  readonly method: string;
  /** The request path for logs: the path without the query (at most 200 characters of a refused target). */
  readonly path: string;
  /** `performance.now()` when the request reached the dispatch, in milliseconds. */
  readonly startedAt: number;
  /**
   * The route template that served the request (`/v1/files/:id`, `/:id/:slug`, an RPC path),
   * for logs and metrics: never a raw path, so its values are few. Set once routed; undefined
   * for a request no route matched.
   */
  route?: string;
  /** The authenticated user's ID, set once a credential is verified (logs). */
  userId?: string;
}

/** What the listener knows of a request when it creates the context. */
export interface RequestFacts {
  method: string;
  path: string;
  /** The TCP peer's address. */
  peer: string;
  /** The `X-Forwarded-For` header, or null. */
  forwardedFor: string | null;
  /** The incoming `X-Request-Id` header, or null. */
  requestId: string | null;
}

/** Decides a request's ID and client address, and starts its clock. */
export function createRequestContext(facts: RequestFacts, trustedProxies: ReadonlySet<string>): RequestContext {
  return {
    requestId: requestIdFrom(facts.requestId),
    clientAddress: clientAddressOf(facts.peer, facts.forwardedFor, trustedProxies),
    method: facts.method,
    path: facts.path,
    startedAt: performance.now(),
  };
}
