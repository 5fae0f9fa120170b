// Anchor for small GETs: a bare Bun.serve answering every request with Bun.file(FILE), the
// least a Bun server can do to serve a file from disk. `--h2` serves h2c (Bun.serve `http2`).
// Prints "listening on port N".
const [file, mode] = process.argv.slice(2);
if (file === undefined) throw new Error("usage: anchor-bun-file.ts FILE [--h2]");
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  ...(mode === "--h2" ? { http2: true } : {}),
  fetch: () => new Response(Bun.file(file)),
} as Parameters<typeof Bun.serve>[0]);
console.log(`listening on port ${server.port}`);
