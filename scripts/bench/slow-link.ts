/**
 * A slow link on loopback for the bench (this kernel has no netem): a TCP relay that holds every
 * chunk DELAY_MS in each direction, so a round trip costs twice that, and keeps at most
 * WINDOW_BYTES in flight per direction of a connection, as a TCP window does over a long link
 * (Linux's default tcp_rmem maximum is 6 MiB): one connection then carries at most
 * WINDOW_BYTES per DELAY_MS, and several connections each their own.
 *
 *   bun scripts/bench/slow-link.ts TARGET_PORT [DELAY_MS=25] [WINDOW_BYTES=4194304] [PORT=0]
 *
 * Listens on 127.0.0.1:PORT (0: any free port); prints "listening on port N" once it accepts
 * connections; runs until killed. A tus server behind it must name the relay in its upload
 * URLs (cubby's HOSTNAME), or the client sends its PATCHes around the relay.
 */
import net from "node:net";

const [target, delayMs = 25, windowBytes = 4 * 2 ** 20, port = 0] = process.argv.slice(2).map(Number);
if (!target) throw new Error("usage: slow-link.ts TARGET_PORT [DELAY_MS] [WINDOW_BYTES] [PORT]");

/** Copies `from` to `to`, each chunk DELAY_MS later, in order; `from` pauses while a window is in flight. */
function relay(from: net.Socket, to: net.Socket): void {
  const queue: { due: number; chunk: Buffer | null }[] = [];
  let held = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const pump = () => {
    timer = undefined;
    while (queue.length > 0 && queue[0]!.due <= performance.now()) {
      const { chunk } = queue.shift()!;
      if (chunk === null) to.end();
      else {
        held -= chunk.byteLength;
        to.write(chunk);
      }
    }
    if (held <= windowBytes && from.isPaused()) from.resume();
    if (queue.length > 0) timer = setTimeout(pump, Math.max(0, queue[0]!.due - performance.now()));
  };
  const push = (chunk: Buffer | null) => {
    queue.push({ due: performance.now() + delayMs, chunk });
    if (chunk !== null) held += chunk.byteLength;
    if (held > windowBytes) from.pause();
    timer ??= setTimeout(pump, delayMs);
  };
  from.on("data", push);
  from.on("end", () => push(null));
}

const server = net.createServer((client) => {
  const upstream = net.connect(target, "127.0.0.1");
  const close = () => {
    client.destroy();
    upstream.destroy();
  };
  // An end is relayed in order after the data (relay); a reset ends both sides at once.
  for (const s of [client, upstream]) {
    s.setNoDelay(true);
    s.on("error", close);
  }
  relay(client, upstream);
  relay(upstream, client);
});
server.listen(port, "127.0.0.1", () => console.log(`listening on port ${(server.address() as net.AddressInfo).port}`));
