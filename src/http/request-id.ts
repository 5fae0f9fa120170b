/** Request IDs: taken from a sane incoming X-Request-Id or minted, echoed back, and logged. */
import { nanoid } from "nanoid";

const ids = new WeakMap<Request, string>();
const SANE = /^[A-Za-z0-9._:-]{1,64}$/;

/** Assigns (once) and returns the request's ID. */
export function requestIdOf(request: Request): string {
  let id = ids.get(request);
  if (id === undefined) {
    id = requestIdFrom(request.headers.get("x-request-id"));
    ids.set(request, id);
  }
  return id;
}

/** The ID for a request whose incoming X-Request-Id header is `incoming`: kept if sane, else minted. */
export function requestIdFrom(incoming: string | null | undefined): string {
  return incoming != null && SANE.test(incoming) ? incoming : nanoid(12);
}
