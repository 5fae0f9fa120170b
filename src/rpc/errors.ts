/**
 * The RPC edge of the error model: every AppError becomes a ConnectError carrying the gRPC code
 * of CONTRACT §2; anything else becomes `internal` ("internal error"), reported (logged with the
 * request id) by context/report.ts like every other surface.
 */
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { report } from "../context/report.ts";
import { grpcCodeOf } from "../errors.ts";
import { requestContextKey } from "./request-context.ts";

/** Converts anything thrown by a handler into the ConnectError a client sees. */
export function toConnectError(err: unknown, ctx: HandlerContext | undefined): ConnectError {
  if (err instanceof ConnectError) return err;
  const appError = report(err, ctx?.values.get(requestContextKey));
  return new ConnectError(appError.message, grpcCodeOf(appError.code) as Code, undefined, undefined, appError);
}

type AnyFn = (...args: never[]) => unknown;

/**
 * Wraps every method of a service implementation so errors leave as ConnectErrors: plain and
 * async methods through try/catch, server-streaming generators around their iteration.
 */
export function rpcErrors<T extends Record<string, AnyFn>>(impl: T): T {
  const wrapped: Record<string, AnyFn> = {};
  for (const [name, fn] of Object.entries(impl)) {
    const call = fn as (...args: unknown[]) => unknown;
    if (Object.prototype.toString.call(fn) === "[object AsyncGeneratorFunction]") {
      wrapped[name] = async function* (...args: unknown[]) {
        try {
          yield* call(...args) as AsyncIterable<unknown>;
        } catch (err) {
          throw toConnectError(err, args[args.length - 1] as HandlerContext);
        }
      } as AnyFn;
    } else {
      wrapped[name] = (async (...args: unknown[]) => {
        try {
          return await call(...args);
        } catch (err) {
          throw toConnectError(err, args[args.length - 1] as HandlerContext);
        }
      }) as AnyFn;
    }
  }
  return wrapped as T;
}
