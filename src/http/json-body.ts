/** Reading JSON request bodies: one bounded reader for every route that takes a JSON object. */
import { essenceOf } from "../domain/params.ts";
import { AppError } from "../errors.ts";

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The request body as a JSON object (RFC 8259), read no further than `maxBytes`.
 * @param opts.emptyIsObject an empty (or all-whitespace) body counts as `{}`, whatever its type
 * @param opts.what how a 415 names the expected body, e.g. "the changes"
 * @throws AppError unsupported_media_type (415) unless Content-Type is application/json;
 *   invalid_argument (400) for a body over `maxBytes` (refused from Content-Length before a byte
 *   is read), bytes that are not UTF-8 (RFC 8259 §8.1), malformed JSON, or JSON that is not an
 *   object
 */
export async function readJsonObject(
  request: Request,
  opts: { maxBytes: number; emptyIsObject?: boolean; what: string },
): Promise<Record<string, unknown>> {
  const length = request.headers.get("content-length");
  if (length !== null && Number(length) > opts.maxBytes) throw tooLarge(opts.maxBytes);
  const text = await readBounded(request, opts.maxBytes);
  if (opts.emptyIsObject === true && text.trim() === "") return {};
  const type = request.headers.get("content-type");
  if (type === null || essenceOf(type) !== "application/json") {
    throw new AppError("unsupported_media_type", `send ${opts.what} as JSON with Content-Type: application/json`);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new AppError("invalid_argument", "body: not valid JSON");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new AppError("invalid_argument", "body: must be a JSON object");
  return body as Record<string, unknown>;
}

/**
 * Checks that `body` has no field outside `allowed`.
 * @throws AppError invalid_argument naming the first unknown field
 */
export function onlyFields(body: Record<string, unknown>, allowed: ReadonlySet<string>): void {
  for (const key of Object.keys(body)) {
    if (!allowed.has(key)) throw new AppError("invalid_argument", `body: unknown field "${key.slice(0, 40)}"`);
  }
}

/** `body[key]` when it is a string or absent. @throws AppError invalid_argument otherwise */
export function optionalString(body: Record<string, unknown>, key: string): string | undefined {
  const v = body[key];
  if (v === undefined) return undefined;
  if (typeof v !== "string") throw new AppError("invalid_argument", `${key}: must be a string`);
  return v;
}

/**
 * The request body as UTF-8 text, read no further than `limit` bytes.
 * @throws AppError invalid_argument for a longer body or bytes that are not UTF-8
 */
export async function readBounded(request: Request, limit: number): Promise<string> {
  const bytes = await readBoundedBytes(request, limit, () => tooLarge(limit));
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new AppError("invalid_argument", "body: not UTF-8 (RFC 8259 §8.1)");
  }
}

/**
 * The request body's bytes, read no further than `limit` bytes (empty when it has none).
 * @throws what `tooLarge` gives, once the body is longer
 */
export async function readBoundedBytes(request: Request, limit: number, tooLarge: () => AppError): Promise<Uint8Array> {
  if (request.body === null) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of request.body) {
    size += chunk.byteLength;
    if (size > limit) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

const tooLarge = (limit: number) => new AppError("invalid_argument", `body: at most ${limit} bytes`);
