// HTTP/2 requests over h2c prior knowledge (node:http2's client), for tests that compare what the
// two protocols answer.
import http2 from "node:http2";

/** An HTTP/2 answer: status, headers (no pseudo headers) and the whole body. */
export interface H2Answer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * Sends one request on `session` and reads its whole answer.
 * @param headers request headers, `:method` (default GET) among them if wanted
 */
export function h2On(session: http2.ClientHttp2Session, path: string, headers: Record<string, string> = {}): Promise<H2Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ":method": "GET", ":path": path, ...headers });
    const chunks: Buffer[] = [];
    let head: http2.IncomingHttpHeaders = {};
    stream.on("response", (h) => (head = h));
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => {
      const out: Record<string, string> = {};
      for (const [name, value] of Object.entries(head)) if (!name.startsWith(":")) out[name] = String(value);
      resolve({ status: Number(head[":status"]), headers: out, body: Buffer.concat(chunks) });
    });
    stream.on("error", reject);
  });
}

/** {@link h2On} on a new h2c session to `origin`, closed after the answer. */
export async function h2Request(origin: string, path: string, headers: Record<string, string> = {}): Promise<H2Answer> {
  const session = http2.connect(origin);
  const failed = new Promise<never>((_, reject) => session.on("error", reject));
  try {
    return await Promise.race([h2On(session, path, headers), failed]);
  } finally {
    session.close();
  }
}
