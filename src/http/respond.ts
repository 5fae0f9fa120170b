/** Small response builders shared by the HTTP routes. */
import { errorHeaders, httpStatusOf, toRpcStatus, type AppError } from "../errors.ts";

/** A JSON response (UTF-8) with the given status. */
export function json(body: unknown, status = 200, headers?: Record<string, string>): Response {
  const text = JSON.stringify(body);
  return new Response(text, {
    status,
    headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)), ...headers },
  });
}

/**
 * The `google.rpc.Status` JSON response for an error (CONTRACT §2): the status of its code,
 * `WWW-Authenticate: Bearer` with a 401 (RFC 6750 §3), `Retry-After` when it says how long to
 * wait (RFC 9110 §10.2.3). The error was reported (context/report.ts) by the caller.
 */
export function errorResponse(error: AppError): Response {
  return json(toRpcStatus(error), httpStatusOf(error.code), errorHeaders(error));
}
