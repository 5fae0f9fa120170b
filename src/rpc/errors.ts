/**
 * The RPC edge of the error model: every AppError becomes a ConnectError carrying the gRPC code
 * of CONTRACT §2; anything else becomes `internal` ("internal error"), its cause logged with the
 * request id (as connect-es does with unknown errors, but with our log line).
 */
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { nanoid } from "nanoid";
import { grpcCodeOf, toAppError } from "../errors.ts";

/** Converts anything thrown by a handler into the ConnectError a client sees. */
export function toConnectError(err: unknown, ctx: HandlerContext | undefined): ConnectError {
  if (err instanceof ConnectError) return err;
  const appError = toAppError(err);
  if (appError.code === "internal" || appError.code === "unavailable") {
    const requestId = ctx?.requestHeader.get("x-request-id") ?? nanoid(12);
    const cause = appError.cause ?? appError;
    const text = cause instanceof Error ? (cause.stack ?? cause.message) : String(cause);
    console.error(`request_id=${requestId} rpc=${ctx?.method.parent.typeName}/${ctx?.method.name} error=${appError.code} cause=${JSON.stringify(text)}`);
  }
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
