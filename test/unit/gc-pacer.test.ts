// Chunks freed at once (issue 38): only what the body reader marked, and only whole buffers.
import { expect, test } from "bun:test";
import { GcPacer, markReleasable, releaseChunk } from "../../src/gc-pacer.ts";

test("a marked chunk is freed once copied; a caller's array, a view, or a chunk freed twice are only counted", () => {
  const pacer = new GcPacer(Number.MAX_SAFE_INTEGER);
  const counted = () => (pacer as unknown as { pending: number }).pending;
  const read = new Uint8Array(1024).fill(7);
  markReleasable(read);
  releaseChunk(read, pacer);
  expect({ length: read.byteLength, detached: read.buffer.detached, counted: counted() }).toEqual({ length: 0, detached: true, counted: 0 });

  const own = new Uint8Array(512).fill(1);
  releaseChunk(own, pacer);
  expect({ length: own.byteLength, first: own[0], counted: counted() }).toEqual({ length: 512, first: 1, counted: 512 });

  const whole = new Uint8Array(256).fill(2);
  const view = whole.subarray(0, 128);
  markReleasable(view);
  releaseChunk(view, pacer);
  expect({ length: whole.byteLength, counted: counted() }).toEqual({ length: 256, counted: 640 });

  releaseChunk(read, pacer);
  expect(counted()).toBe(640);
});

test("a part of a marked chunk is only counted: the rest of its buffer is still the reader's (an aws-chunked body's next chunk)", () => {
  const pacer = new GcPacer(Number.MAX_SAFE_INTEGER);
  const read = new Uint8Array(1024).fill(9);
  markReleasable(read);
  releaseChunk(read.subarray(0, 100), pacer);
  expect({ length: read.byteLength, last: read[1023], counted: (pacer as unknown as { pending: number }).pending }).toEqual({ length: 1024, last: 9, counted: 100 });
  releaseChunk(read, pacer);
  expect(read.buffer.detached).toBe(true);
});
