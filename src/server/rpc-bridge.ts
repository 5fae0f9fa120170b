/**
 * RPC requests (gRPC, gRPC-Web, Connect on HTTP/1.1 and h2c): unary calls in their plain forms
 * to the unary fast path (rpc/unary.ts), everything else to connect-node, each with its request
 * context under `requestContextKey` (connect-node's `contextValues` option).
 */
import type { ConnectRouter, Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { RequestContext } from "../context/request-context.ts";
import { RPC_OPTIONS } from "../rpc/index.ts";
import { rpcContextValues } from "../rpc/request-context.ts";
import type { FileUnaryMethods } from "../rpc/file-service.ts";
import { unaryFastPath, type CallObserver } from "../rpc/unary.ts";
import { lingeringClose } from "./lingering-close.ts";
import type { ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { NodeRequest, NodeResponse } from "./node-bridge.ts";

/** Serves one RPC request; `context` reaches the handlers as `ctx.values.get(requestContextKey)`. */
export type RpcHandler = (req: NodeRequest, res: NodeResponse, context: RequestContext) => void;

/**
 * The RPC handler for `routes`, with `interceptors` (metrics) around every call connect-node
 * serves; with `unary`, the unary fast path answers the calls it takes first, telling `observe`
 * of each as the metrics interceptor would be.
 */
export function rpcHandler(
  routes: (router: ConnectRouter) => void,
  interceptors: Interceptor[] = [],
  unary?: { methods: FileUnaryMethods; observe?: CallObserver },
): RpcHandler {
  const fast = unary === undefined ? undefined : unaryFastPath(unary.methods, { observe: unary.observe, closeAfter });
  // connect-node hands contextValues the Node request only: the context waits here for it.
  const contexts = new WeakMap<NodeRequest, RequestContext>();
  const adapter = connectNodeAdapter({ ...RPC_OPTIONS, interceptors, routes, contextValues: (req) => rpcContextValues(contexts.get(req)!) });
  return (req, res, context) => {
    if (fast?.(req, res, context) === true) return;
    contexts.set(req, context);
    // connect-node builds the request URL from the Host, which HTTP/1.0 may leave out.
    if (req.httpVersionMajor === 1) req.headers.host ??= "localhost";
    adapter(req, res);
  };
}

/**
 * An HTTP/1.1 answer sent before its request body was read to the end: the connection closes
 * after it, lingering (lingering-close.ts) so that the client, still sending, reads the answer
 * rather than a reset; Bun's node:http would otherwise close it with destroySoon().
 */
function closeAfter(req: NodeRequest, res: NodeResponse): void {
  res.setHeader("connection", "close");
  (res as ServerResponse).shouldKeepAlive = false;
  const socket = req.socket as Duplex & { destroySoon?: () => void };
  socket.destroySoon = () => lingeringClose(socket);
}
