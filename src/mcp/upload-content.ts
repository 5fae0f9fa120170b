/**
 * The content of an MCP `upload_file` call: text or base64 inside the JSON-RPC message, turned
 * into bytes and a media type before the file service sees them. Pure: no I/O.
 */
import { AppError } from "../errors.ts";
import { parseMediaType } from "../domain/params.ts";

/**
 * Largest JSON-RPC request body `/mcp` reads, in bytes. Upload content travels inside it (as text
 * or base64) and is held in memory, so this stays far below MAX_UPLOAD_BYTES' default: bigger
 * files go through REST or tus, which stream. The SDK's transport answers 413 past it.
 */
export const MAX_MCP_REQUEST_BYTES = 16 * 1024 * 1024;

/**
 * The largest content an upload can carry inline, in bytes: MAX_UPLOAD_BYTES, or less when base64
 * of that size (4 characters per 3 bytes) would not fit in {@link MAX_MCP_REQUEST_BYTES} with
 * room for the rest of the message.
 */
export function maxInlineBytes(maxUploadBytes: number): number {
  return Math.min(maxUploadBytes, Math.floor((MAX_MCP_REQUEST_BYTES - 64 * 1024) / 4) * 3);
}

/** The media type of text content when the caller names none. */
export const TEXT_CONTENT_TYPE = "text/plain; charset=utf-8";

/** What `upload_file` says about its content (the tool's arguments of that name). */
export interface UploadContentArgs {
  /** The content as text, stored as UTF-8. */
  content?: string | undefined;
  /** The content as base64 (RFC 4648 §4). */
  content_base64?: string | undefined;
  /** A media type as in Content-Type; absent or "": text/plain for `content`, else application/octet-stream. */
  content_type?: string | undefined;
}

// RFC 4648 §4: the standard alphabet, with or without the trailing "=" padding.
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * The bytes and media type of an upload: exactly one of `content` (text, stored as UTF-8) and
 * `content_base64` (RFC 4648 §4 base64; line breaks and spaces are ignored, padding optional).
 * @param maxBytes the largest content accepted (MAX_UPLOAD_BYTES)
 * @throws AppError invalid_argument for neither or both, text that is not valid Unicode (a lone
 *   surrogate), base64 that is not, or a media type that is not one (domain/params.ts
 *   parseMediaType); payload_too_large for more than `maxBytes` bytes, with the message REST gives
 */
export function decodeUploadContent(args: UploadContentArgs, maxBytes: number): { bytes: Uint8Array; contentType: string } {
  const { content, content_base64: base64 } = args;
  if (content !== undefined && base64 !== undefined) {
    throw new AppError("invalid_argument", "give the content as content (text) or as content_base64, not both");
  }
  if (content === undefined && base64 === undefined) {
    throw new AppError("invalid_argument", "give the file's content as content (text) or as content_base64");
  }
  let bytes: Uint8Array;
  if (content !== undefined) {
    if (!content.isWellFormed()) throw new AppError("invalid_argument", "content: not valid Unicode (a lone surrogate); send binary content as content_base64");
    bytes = new TextEncoder().encode(content);
  } else {
    bytes = decodeBase64(base64!);
  }
  if (bytes.byteLength > maxBytes) throw new AppError("payload_too_large", `content is larger than the limit of ${maxBytes} bytes`);
  const declared = args.content_type ?? "";
  const contentType = declared.trim() === "" && content !== undefined ? TEXT_CONTENT_TYPE : parseMediaType(declared);
  return { bytes, contentType };
}

/** RFC 4648 §4 base64 to bytes, strictly: anything but the alphabet, white space and final padding is refused. */
function decodeBase64(raw: string): Uint8Array {
  const text = raw.replace(/[ \t\r\n]/g, "");
  const padded = text.endsWith("=");
  if (!BASE64.test(text) || (padded ? text.length % 4 !== 0 : text.length % 4 === 1)) {
    throw new AppError("invalid_argument", "content_base64: not base64 (RFC 4648 §4: A-Z a-z 0-9 + /, optionally padded with =)");
  }
  return new Uint8Array(Buffer.from(text, "base64"));
}
