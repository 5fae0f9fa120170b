/**
 * Serves fetch-style handlers on node:http2 streams: turns an HTTP/2 request into a `Request`,
 * and writes the `Response` back with backpressure (a slow reader pauses the body, it is not
 * buffered). Used for REST, content URLs and static files arriving over h2c.
 */
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { Readable } from "node:stream";
import type { ClientRequestHandler } from "./request-handler.ts";

/** Handles one HTTP/2 request with `handle`. Errors end the stream with a 500 if nothing was sent. */
export async function serveH2WithFetch(req: Http2ServerRequest, res: Http2ServerResponse, handle: ClientRequestHandler): Promise<void> {
  try {
    const authority = req.headers[":authority"] ?? req.headers.host ?? "localhost";
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (name.startsWith(":") || value === undefined) continue;
      if (Array.isArray(value)) for (const v of value) headers.append(name, v);
      else headers.set(name, value);
    }
    const hasBody = req.method !== "GET" && req.method !== "HEAD";
    const request = new Request(`http://${authority}${req.url}`, {
      method: req.method,
      headers,
      body: hasBody ? (Readable.toWeb(req as unknown as Readable) as ReadableStream<Uint8Array>) : null,
      duplex: "half",
    } as RequestInit);
    const response = await handle(request, req.socket?.remoteAddress ?? "unknown");
    const out: Record<string, string | string[]> = {};
    response.headers.forEach((value, name) => {
      if (name === "connection" || name === "keep-alive" || name === "transfer-encoding") return;
      if (name === "set-cookie") return;
      out[name] = value;
    });
    const cookies = response.headers.getSetCookie();
    if (cookies.length > 0) out["set-cookie"] = cookies;
    res.writeHead(response.status, out);
    if (response.body === null || req.method === "HEAD") {
      res.end();
      return;
    }
    for await (const chunk of response.body) {
      if (res.destroyed) break;
      if (!res.write(chunk)) await new Promise<void>((resolve) => {
        const done = () => {
          res.off("drain", done);
          res.off("close", done);
          resolve();
        };
        res.on("drain", done);
        res.on("close", done);
      });
    }
    res.end();
  } catch (err) {
    console.error(`h2: request ${req.method} ${req.url} failed: ${err instanceof Error ? err.stack : String(err)}`);
    if (!res.headersSent) {
      res.writeHead(500, { "content-type": "application/json" });
      res.end('{"code":13,"message":"internal error","details":[]}');
    } else {
      res.stream.close();
    }
  }
}
