/**
 * Content-Disposition values (RFC 6266) with the file name in both forms: an ASCII fallback
 * `filename="…"` and the exact name as `filename*=UTF-8''…` (RFC 8187, formerly RFC 5987).
 */

/**
 * @param type `inline` to display in the browser, `attachment` to download
 * @param name the file's name; "" gives the bare disposition type
 */
export function contentDisposition(type: "inline" | "attachment", name: string): string {
  if (name === "") return type;
  // Names never hold control characters (validated); quotes and backslashes would end or
  // escape the quoted string, and non-ASCII is not allowed in it.
  const fallback = name.replace(/[^\x20-\x7E]|["\\%]/g, "_");
  return `${type}; filename="${fallback}"; filename*=UTF-8''${encodeRfc8187(name)}`;
}

/** Percent-encodes everything outside RFC 8187's attr-char set. */
function encodeRfc8187(s: string): string {
  return encodeURIComponent(s).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
