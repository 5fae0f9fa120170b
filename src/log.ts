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

/** Lines kept back at most before a write, whatever the event loop is doing. */
const LOG_BATCH_LINES = 1024;

/**
 * PIPE_BUF on Linux (pipe(7)): a write of at most this many bytes to a pipe is never interleaved
 * with another process's writes. Workers (WORKERS > 1) share their supervisor's stdout.
 */
export const PIPE_ATOMIC_BYTES = 4096;

/**
 * An access log that writes the lines of one event-loop turn together: one `write` for a burst
 * of requests instead of one per request (nginx's `access_log … buffer=` does the same). A line
 * waits at most until the loop's next turn; `flush` writes what is waiting at once (on stop).
 * @param maxWriteBytes the most one write carries, cut at line ends (a longer line goes alone):
 *   {@link PIPE_ATOMIC_BYTES} where several processes write to one pipe, so lines never mix
 */
export function batchedLog(write: (chunk: string) => void, maxWriteBytes = Number.POSITIVE_INFINITY): { log: (line: string) => void; flush: () => void } {
  let pending: string[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (pending.length === 0) return;
    const lines = pending;
    pending = [];
    if (maxWriteBytes === Number.POSITIVE_INFINITY) return write(`${lines.join("\n")}\n`);
    let chunk = "";
    let bytes = 0;
    for (const line of lines) {
      const size = Buffer.byteLength(line) + 1;
      if (bytes > 0 && bytes + size > maxWriteBytes) {
        write(chunk);
        chunk = "";
        bytes = 0;
      }
      chunk += `${line}\n`;
      bytes += size;
    }
    write(chunk);
  };
  return {
    log(line) {
      pending.push(line);
      if (pending.length >= LOG_BATCH_LINES) flush();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    flush,
  };
}
