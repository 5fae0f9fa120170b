// The tus settings of the dashboard (app.js) and the guest upload page (upload.js), in one place:
// scripts/bench imports this file too, so the slow-link bench measures the settings that ship.
// No DOM: plain values and one function.

/**
 * Bytes per PATCH request: below the request body caps of common proxies (Cloudflare's 100 MB;
 * nginx's default 1 MiB aside, which needs client_max_body_size raised).
 */
export const CHUNK_BYTES = 8 * 1024 * 1024;
/**
 * Partial uploads sent side by side for a large file (tus concatenation). Each waits a round
 * trip per chunk; several in flight keep a long-delay link full, as one `curl -T` does.
 */
export const MAX_PARALLEL_UPLOADS = 6;
/** Waits before retrying a failed request (ms), then the error is the page's to handle. */
export const RETRY_DELAYS_MS = [0, 1000, 3000, 5000];

/**
 * tus-js-client options for a file of `size` bytes: one partial upload per chunk's worth up to
 * {@link MAX_PARALLEL_UPLOADS} (a file under two chunks goes as one plain upload: parallel parts
 * would only add requests), each sent in {@link CHUNK_BYTES} requests.
 * @param {number} size bytes
 * @returns {{ chunkSize: number, parallelUploads: number, retryDelays: number[] }}
 */
export function tusOptions(size) {
  const parts = Math.max(1, Math.min(MAX_PARALLEL_UPLOADS, Math.floor(size / CHUNK_BYTES)));
  return { chunkSize: CHUNK_BYTES, parallelUploads: parts, retryDelays: [...RETRY_DELAYS_MS] };
}
