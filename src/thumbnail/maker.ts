/**
 * Makes thumbnails in a child process (CONTRACT §15): this program run again as
 * `cubby __thumbnail`, the image on its standard input, the WebP on its standard output.
 *
 * Why a process and not the serving one or a thread: decoding a 24-megapixel photo holds about
 * 100 MiB of pixels and a second or more of CPU (docs/benchmarks.md, "thumbnails in
 * WebAssembly"). In its own process that work never waits in a serving event loop (CONTRACT
 * §14), a codec that fails however it fails (a trap, running out of memory, a hang: killed after
 * {@link MakerOptions.timeoutMs}) ends only that process, and its memory goes back to the system
 * when it exits, where a WebAssembly heap, once grown, never shrinks. A serving process runs one
 * at a time and lets at most {@link MAX_WAITING} more wait; nothing is written to disk.
 */
import fs from "node:fs";
import os from "node:os";
import { AppError } from "../errors.ts";
import { logError } from "../log.ts";
import { selfCommand } from "../self-command.ts";
import { makeThumbnail, ThumbnailError } from "./codec.ts";

/** How many thumbnails may wait for the one being made in a process before more are refused (503). */
export const MAX_WAITING = 16;

/** The child's nice value (nice(2)): the serving processes come first. */
const CHILD_NICENESS = 10;

/** The exit status of `cubby __thumbnail` when the codec refused the image (standard error: "reason: message"). */
const REFUSED_EXIT = 3;

export interface MakerOptions {
  /** The longest edge of a thumbnail (pixels). */
  maxEdge: number;
  /** A child still running after this is killed and the image counts as one that failed (ms). */
  timeoutMs: number;
}

/** Runs `cubby __thumbnail` children one at a time. */
export class ThumbnailMaker {
  private tail: Promise<unknown> = Promise.resolve();
  private waiting = 0;

  constructor(private readonly opts: MakerOptions) {}

  /**
   * A WebP thumbnail of `input`, an image of `mediaType`, at most `maxEdge` pixels on its longer
   * edge, without the source's metadata (EXIF, GPS). `input` is read only when the child starts
   * (streamed to it: this process never holds the whole image). An image of more than
   * `maxPixels` is refused before it is decoded.
   * @throws ThumbnailError when it cannot be made (unsupported, too_large, corrupt; a child that
   *   crashed or ran out of time is "corrupt"); AppError unavailable (503, Retry-After) when
   *   {@link MAX_WAITING} are waiting already
   */
  make(input: AsyncIterable<Uint8Array>, mediaType: string, maxPixels: number): Promise<Uint8Array> {
    if (this.waiting >= MAX_WAITING) throw new AppError("unavailable", "thumbnails are being made; try again shortly", { retryAfterSeconds: 2 });
    this.waiting++;
    const run = this.tail.then(() => this.runChild(input, mediaType, maxPixels));
    this.tail = run.catch(() => {}).finally(() => this.waiting--);
    return run;
  }

  private async runChild(input: AsyncIterable<Uint8Array>, mediaType: string, maxPixels: number): Promise<Uint8Array> {
    const args = ["__thumbnail", mediaType, String(this.opts.maxEdge), String(maxPixels)];
    const child = Bun.spawn(selfCommand(args), { stdin: streamOf(input), stdout: "pipe", stderr: "pipe" });
    // Niced from its first instruction, before it has loaded a module.
    lowerPriority(child.pid);
    const timer = setTimeout(() => child.kill("SIGKILL"), this.opts.timeoutMs);
    try {
      const [output, errors, status] = await Promise.all([new Response(child.stdout).bytes(), new Response(child.stderr).text(), child.exited]);
      if (status === 0) return output;
      if (status === REFUSED_EXIT) {
        const [reason, ...message] = errors.trim().split(": ");
        throw new ThumbnailError(reason === "unsupported" || reason === "too_large" ? reason : "corrupt", message.join(": "));
      }
      const why = child.signalCode === "SIGKILL" ? `ran longer than ${this.opts.timeoutMs} ms` : `ended with status ${status}${child.signalCode ? ` (${child.signalCode})` : ""}`;
      logError(`thumbnail of a ${mediaType}: its process ${why}: ${errors.trim().slice(-300)}`);
      throw new ThumbnailError("corrupt", `the thumbnail's process ${why}`);
    } finally {
      clearTimeout(timer);
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  }
}

/**
 * `cubby __thumbnail MEDIA_TYPE MAX_EDGE MAX_PIXELS` (internal: what {@link ThumbnailMaker}
 * runs): reads an image from standard input, writes its WebP thumbnail to standard output.
 * @returns the exit status: 0 done, 3 refused (standard error "reason: message"), 2 bad arguments
 */
export async function thumbnailCommand(args: string[]): Promise<number> {
  const [mediaType, maxEdge, maxPixels] = args;
  if (mediaType === undefined || !(Number(maxEdge) > 0) || !(Number(maxPixels) > 0)) {
    process.stderr.write("usage: cubby __thumbnail MEDIA_TYPE MAX_EDGE MAX_PIXELS < image > thumbnail.webp\n");
    return 2;
  }
  const input = await new Response(Bun.stdin.stream()).bytes();
  try {
    const { image } = await makeThumbnail(input, mediaType, { maxEdge: Number(maxEdge), maxPixels: Number(maxPixels) });
    await Bun.write(Bun.stdout, image);
    return 0;
  } catch (err) {
    if (!(err instanceof ThumbnailError)) throw err;
    process.stderr.write(`${err.reason}: ${err.message} (of ${input.byteLength} bytes read)\n`);
    return REFUSED_EXIT;
  }
}

/** `input` as a byte stream that reads it only as the child takes it. */
function streamOf(input: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const chunks = input[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await chunks.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel() {
      await chunks.return?.();
    },
  });
}

/**
 * Puts a thumbnail's process behind the serving processes for the CPU (nice 10: on a busy
 * machine a thumbnail waits, not a request) and first in line for the kernel's OOM killer
 * (oom_score_adj 1000), should a big image find the machine short of memory. Raising either
 * needs no privilege; where it fails (not Linux) the limit on pixels still bounds the work.
 */
function lowerPriority(pid: number): void {
  try {
    os.setPriority(pid, CHILD_NICENESS);
    fs.writeFileSync(`/proc/${pid}/oom_score_adj`, "1000");
  } catch {
    // exited already, or not Linux
  }
}
