/** Request IDs: taken from a sane incoming X-Request-Id or minted, echoed back, and logged. */
import { nanoid } from "nanoid";

/** What an incoming X-Request-Id may look like to be kept: short, no spaces or quotes. */
const SANE = /^[A-Za-z0-9._:-]{1,64}$/;

/**
 * The ID of a request whose incoming `X-Request-Id` header is `incoming`: kept if sane (1–64 of
 * `A-Z a-z 0-9 . _ : -`, so it can go into a log line unquoted), else a new 12-character nanoid.
 */
export function requestIdFrom(incoming: string | null | undefined): string {
  return incoming != null && SANE.test(incoming) ? incoming : nanoid(12);
}
