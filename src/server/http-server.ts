/**
 * The listener: Bun.serve on the one port, with a request log line per request and graceful
 * shutdown. Bun's own body-size limit is lifted: upload limits are enforced while streaming
 * (MAX_UPLOAD_BYTES), so a multi-GB upload is never stopped by a framework default.
 */
import type { Server } from "bun";
import { requestIdOf } from "../http/request-id.ts";

export interface HttpServerOptions {
  port: number;
  /** The application's fetch handler (Elysia's `app.handle`). */
  handle: (request: Request) => Promise<Response> | Response;
  /** Where access log lines go; defaults to stdout. */
  log?: (line: string) => void;
}

/** Seconds a connection may stay silent (headers or body) before it is closed. */
export const IDLE_TIMEOUT_SECONDS = 60;

/** Starts listening. @returns the Bun server (its `port` is the bound port). */
export function startHttpServer(opts: HttpServerOptions): Server<undefined> {
  const log = opts.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  return Bun.serve({
    port: opts.port,
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    idleTimeout: IDLE_TIMEOUT_SECONDS,
    async fetch(request) {
      const started = performance.now();
      const requestId = requestIdOf(request);
      const response = await opts.handle(request);
      response.headers.set("x-request-id", requestId);
      const { pathname } = new URL(request.url);
      log(
        `method=${request.method} path=${JSON.stringify(pathname)} status=${response.status} ` +
          `bytes=${response.headers.get("content-length") ?? "-"} ` +
          `duration_ms=${(performance.now() - started).toFixed(1)} request_id=${requestId}`,
      );
      return response;
    },
  });
}
