/**
 * An h2c connection's TCP socket as node:http2 is given it: behind a plain `Duplex`, so that
 * what Bun's HTTP/2 session writes in one turn of the event loop goes out in a few sends instead
 * of one per answer. Given a `node:net` socket, Bun's frame writer writes each answer's frames
 * to the native handle with one `sendto` (strace: 16 000 sends for 16 000 small answers, 16 per
 * read of h2load's 16 requests); through `write()` on this wrapper, the socket is corked from
 * the first write of a turn until the next tick, once the answers finished by the turn's
 * promise jobs are written, and Bun's socket coalesces up to 16 KiB per send (4 016 sends).
 * `setImmediate` batches no more (same count) and makes the client wait for the loop's check
 * phase. Back-pressure is the socket's: a write's callback comes from the socket,
 * so a client that stops reading fills the socket's buffer, then this stream's, and the session
 * stops writing (its own `drain` listener resumes it).
 */
import type net from "node:net";
import { Duplex } from "node:stream";

/** The TCP socket of one h2c connection, corked per event-loop turn (module comment). */
export class CorkedSocket extends Duplex {
  private corked = false;

  constructor(private readonly socket: net.Socket) {
    super();
    socket.on("data", (chunk: Buffer) => {
      if (!this.push(chunk)) socket.pause();
    });
    socket.on("end", () => this.push(null));
    socket.on("close", () => this.destroy());
    socket.on("error", (err) => this.destroy(err));
  }

  /** The client's address (access log, connection limits, metrics' loopback check). */
  get remoteAddress(): string | undefined {
    return this.socket.remoteAddress;
  }

  get remotePort(): number | undefined {
    return this.socket.remotePort;
  }

  get remoteFamily(): string | undefined {
    return this.socket.remoteFamily;
  }

  get localAddress(): string | undefined {
    return this.socket.localAddress;
  }

  get localPort(): number | undefined {
    return this.socket.localPort;
  }

  /** Bytes written to the connection so far: node:http2's idle timer looks for progress here. */
  get bytesWritten(): number {
    return this.socket.bytesWritten;
  }

  get bytesRead(): number {
    return this.socket.bytesRead;
  }

  override _read(): void {
    this.socket.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (err?: Error | null) => void): void {
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(() => this.flush());
    }
    this.socket.write(chunk, callback);
  }

  override _final(callback: (err?: Error | null) => void): void {
    this.flush();
    this.socket.end(callback);
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    // What was written before (a GOAWAY, an answer's last frames) goes out first.
    this.flush();
    this.socket.destroy(err ?? undefined);
    callback(err);
  }

  private flush(): void {
    if (!this.corked) return;
    this.corked = false;
    this.socket.uncork();
  }
}
