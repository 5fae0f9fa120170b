/**
 * How Connect handlers get the request's {@link RequestContext}: connect-node's `contextValues`
 * option (set by the listener, `server/one-port.ts`) puts it under {@link requestContextKey},
 * and a handler reads `ctx.values.get(requestContextKey)` — no header.
 */
import { createContextKey, createContextValues, type ContextValues } from "@connectrpc/connect";
import type { RequestContext } from "../context/request-context.ts";

/** The request's context; undefined for a call that did not come through the listener (an in-process transport). */
export const requestContextKey = createContextKey<RequestContext | undefined>(undefined, { description: "cubby request context" });

/** The context values of one RPC call: its request context. */
export function rpcContextValues(context: RequestContext): ContextValues {
  return createContextValues().set(requestContextKey, context);
}
