/**
 * What a running server leaves in its data directory for the CLI (CONTRACT §17: the CLI cannot
 * act on the wrong data): `DATA_DIR/server.json`, `{"url","port","pid","started_at"}`, written
 * when it listens. `cubby login-link` prints a link on the URL recorded there, so a link made
 * from another directory, or against a server on another port, opens that server. Kept after a
 * stop: the same data is served on the same URL when it starts again.
 */
import fs from "node:fs";
import path from "node:path";
import { PRIVATE_FILE_MODE } from "../storage/permissions.ts";

/** The record's file name in the data directory. */
export const SERVER_RECORD = "server.json";

/** What the server recorded: its public URL, the port it listened on, its PID, when it started. */
export interface ServerRecord {
  url: string;
  port: number;
  pid: number;
  startedAt: string;
}

/**
 * Writes the record (a temporary file renamed over the old one, owner-only). A failure is
 * returned, not thrown: serving goes on without it.
 */
export function recordServer(dataDir: string, record: ServerRecord): Error | undefined {
  const file = path.join(dataDir, SERVER_RECORD);
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(tmp, `${JSON.stringify({ url: record.url, port: record.port, pid: record.pid, started_at: record.startedAt })}\n`, { mode: PRIVATE_FILE_MODE });
    fs.renameSync(tmp, file);
    return undefined;
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    return e as Error;
  }
}

/** The record in `dataDir`, or undefined when there is none (or it cannot be read as one). */
export function readServerRecord(dataDir: string): ServerRecord | undefined {
  try {
    const raw = JSON.parse(fs.readFileSync(path.join(dataDir, SERVER_RECORD), "utf8")) as Record<string, unknown>;
    if (typeof raw.url !== "string" || typeof raw.port !== "number" || typeof raw.pid !== "number") return undefined;
    return { url: raw.url, port: raw.port, pid: raw.pid, startedAt: typeof raw.started_at === "string" ? raw.started_at : "" };
  } catch {
    return undefined;
  }
}
