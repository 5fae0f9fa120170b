/**
 * Large request bodies for tests, made on the fly and never held whole: `total` bytes of one
 * random 1 MiB block, each chunk stamped with its offset (so no two chunks are equal), handed
 * to `onChunk` as they go (for a running checksum).
 */
const CHUNK = 1024 * 1024;

export function generated(total: number, onChunk: (c: Uint8Array) => void = () => {}): ReadableStream<Uint8Array> {
  const block = crypto.getRandomValues(new Uint8Array(CHUNK));
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= total) return controller.close();
      const chunk = new Uint8Array(block.subarray(0, Math.min(CHUNK, total - sent)));
      if (chunk.byteLength >= 8) new DataView(chunk.buffer).setFloat64(0, sent);
      sent += chunk.byteLength;
      onChunk(chunk);
      controller.enqueue(chunk);
    },
  });
}
