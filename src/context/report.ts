/**
 * Where an internal error is logged: {@link report}, called once by whichever edge renders the
 * failure (the HTTP app's onError and sign-in pages, the RPC error wrapper, content URLs (serving/content.ts),
 * the Node bridge), never by the code that threw.
 */
import { toAppError, type AppError } from "../errors.ts";
import { jsonLine, logFormat } from "../log.ts";
import type { RequestContext } from "./request-context.ts";

/** Errors already logged: a failure that crosses two edges is still one log line. */
const reported = new WeakSet<object>();

/**
 * Turns anything thrown while serving a request into the {@link AppError} its caller sees
 * (errors.ts's table decides the status), and logs it to stderr when the operator must look:
 * `internal` and `unavailable`, with their cause, as one line
 * `method=GET path="/x" request_id=abc error=internal cause="Error: …\n at …"` (LOG_FORMAT=json: one
 * JSON object with the access log's request fields, `error` and `cause`).
 * The same error object is logged at most once.
 * @param context the request's context; undefined only outside a request (printed as `-`)
 */
export function report(err: unknown, context: RequestContext | undefined): AppError {
  const appError = toAppError(err);
  const cause = appError.cause ?? appError;
  // toAppError wraps a foreign error anew on each call: the thrown object is what identifies it.
  const key = typeof cause === "object" && cause !== null ? cause : appError;
  if ((appError.code === "internal" || appError.code === "unavailable") && !reported.has(key)) {
    reported.add(key);
    console.error(logFormat() === "json" ? errorJson(appError, cause, context) : errorText(appError, cause, context));
  }
  return appError;
}

function errorText(appError: AppError, cause: unknown, context: RequestContext | undefined): string {
  const where = context === undefined ? "" : `method=${context.method} path=${JSON.stringify(context.path)} `;
  return `${where}request_id=${context?.requestId ?? "-"} error=${appError.code} cause=${formatCause(cause)}`;
}

/** LOG_FORMAT=json: the request's fields as in the access log (serving/access-log.ts), `error` and `cause`. */
function errorJson(appError: AppError, cause: unknown, context: RequestContext | undefined): string {
  return jsonLine("error", {
    request_id: context?.requestId ?? null,
    method: context?.method ?? null,
    route: context?.route ?? null,
    path: context?.path ?? null,
    client_address: context?.clientAddress ?? null,
    user_id: context?.userId ?? null,
    error: appError.code,
    cause: cause instanceof Error ? (cause.stack ?? `${cause.name}: ${cause.message}`) : String(cause),
  });
}

function formatCause(cause: unknown): string {
  if (cause instanceof Error) return JSON.stringify(cause.stack ?? `${cause.name}: ${cause.message}`);
  return JSON.stringify(String(cause));
}
