/** Small response builders shared by the HTTP routes. */
import { AppError, httpStatusOf, toAppError, toRpcStatus } from "../errors.ts";

/** A JSON response (UTF-8) with the given status. */
export function json(body: unknown, status = 200, headers?: Record<string, string>): Response {
  const text = JSON.stringify(body);
  return new Response(text, {
    status,
    headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)), ...headers },
  });
}

/**
 * The `google.rpc.Status` JSON response for any error (CONTRACT §2). Internal errors are logged
 * with their cause and the request id; the client sees only "internal error".
 */
export function errorResponse(err: unknown, requestId: string | undefined): Response {
  const appError = toAppError(err);
  if (appError.code === "internal" || appError.code === "unavailable") {
    const cause = appError.cause ?? appError;
    console.error(`request_id=${requestId ?? "-"} error=${appError.code} cause=${formatCause(cause)}`);
  }
  const headers: Record<string, string> = {};
  if (appError.code === "unauthenticated") headers["www-authenticate"] = 'Bearer realm="cubby"';
  if (appError.retryAfterSeconds !== undefined) headers["retry-after"] = String(appError.retryAfterSeconds);
  return json(toRpcStatus(appError), httpStatusOf(appError.code), headers);
}

function formatCause(cause: unknown): string {
  if (cause instanceof Error) return JSON.stringify(cause.stack ?? `${cause.name}: ${cause.message}`);
  return JSON.stringify(String(cause));
}

export { AppError };
