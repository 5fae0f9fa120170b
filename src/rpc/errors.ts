/**
 * The RPC edge of the error model: every AppError becomes a ConnectError carrying the gRPC code
 * of CONTRACT §2; anything else becomes `internal` ("internal error"), reported (logged with the
 * request id) by context/report.ts like every other surface.
 */
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { report } from "../context/report.ts";
import type { RequestContext } from "../context/request-context.ts";
import { grpcCodeOf } from "../errors.ts";
import { requestContextKey } from "./request-context.ts";

/**
 * Converts anything thrown by a handler into the ConnectError a client sees, reporting internal
 * errors with the request's context.
 */
export function toConnectError(err: unknown, context: RequestContext | undefined): ConnectError {
  if (err instanceof ConnectError) return err;
  const appError = report(err, context);
  return new ConnectError(appError.message, grpcCodeOf(appError.code) as Code, undefined, undefined, appError);
}

type AnyFn = (...args: never[]) => unknown;

/**
 * Wraps every method of a service implementation so errors leave as ConnectErrors, whatever the
 * method returns: a promise (unary and client-streaming methods) is awaited in a try/catch, an
 * async iterable (server-streaming methods) is iterated in one.
 */
export function rpcErrors<T extends Record<string, AnyFn>>(impl: T): T {
  const wrapped: Record<string, AnyFn> = {};
  for (const [name, fn] of Object.entries(impl)) {
    const call = fn as (...args: unknown[]) => unknown;
    wrapped[name] = ((...args: unknown[]) => {
      const ctx = args[args.length - 1] as HandlerContext;
      let result: unknown;
      try {
        result = call(...args);
      } catch (err) {
        return Promise.reject(toConnectError(err, ctx.values.get(requestContextKey)));
      }
      if (isAsyncIterable(result)) return rethrowing(result, ctx);
      return Promise.resolve(result).catch((err: unknown) => {
        throw toConnectError(err, ctx.values.get(requestContextKey));
      });
    }) as AnyFn;
  }
  return wrapped as T;
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === "object" && value !== null && !(value instanceof Promise) && Symbol.asyncIterator in value;
}

async function* rethrowing(stream: AsyncIterable<unknown>, ctx: HandlerContext): AsyncIterable<unknown> {
  try {
    yield* stream;
  } catch (err) {
    throw toConnectError(err, ctx.values.get(requestContextKey));
  }
}
