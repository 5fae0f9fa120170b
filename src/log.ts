/**
 * The server's log lines on stdout and stderr, in one of two formats (LOG_FORMAT, CONTRACT §9):
 * `text`, the `key=value` lines cubby always printed, or `json`, one JSON object per line with
 * `time` (RFC 3339, UTC, milliseconds), `level` (`info` or `error`) and `msg` or the event's own
 * fields — what log collectors (Loki, Vector, Fluent Bit, journald's JSON export) parse as is.
 * Set once at start-up by `cubby serve`; command-line tools keep printing plain text.
 */

/** `text` (default) or `json`. */
export type LogFormat = "text" | "json";

let format: LogFormat = "text";

/** Chooses the format of every line logged from now on. */
export function setLogFormat(f: LogFormat): void {
  format = f;
}

/** The format lines are logged in. */
export function logFormat(): LogFormat {
  return format;
}

/** One JSON log line (no newline): `time` and `level` first, then `fields` in their order. */
export function jsonLine(level: "info" | "error", fields: Record<string, unknown>): string {
  return JSON.stringify({ time: new Date().toISOString(), level, ...fields });
}

/** Logs an event of the server's life (listening, stopping, sweeps) on stdout. */
export function logInfo(msg: string): void {
  console.log(format === "json" ? jsonLine("info", { msg }) : msg);
}

/** Logs a failure the operator must look at on stderr (a failed sweep, an unreachable store). */
export function logError(msg: string): void {
  console.error(format === "json" ? jsonLine("error", { msg }) : msg);
}
