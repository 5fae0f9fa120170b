/**
 * S3's errors, as S3 answers them: an HTTP status and an XML body
 * `<Error><Code/><Message/><Resource/><RequestId/>…</Error>` (AWS S3 API Reference, "Error
 * responses", https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html).
 *
 * Codes this module's callers use (status, code): 403 SignatureDoesNotMatch, AccessDenied,
 * InvalidAccessKeyId, RequestTimeTooSkewed; 400 AuthorizationHeaderMalformed,
 * AuthorizationQueryParametersError, XAmzContentSHA256Mismatch, BadDigest, InvalidDigest,
 * InvalidRequest, InvalidArgument, IncompleteBody; 411 MissingContentLength.
 */

/**
 * An S3 error as S3 answers it (AWS S3 API Reference, "Error responses"): an HTTP status, S3's
 * code, a message, and optional extra elements S3 adds for some codes (e.g. `StringToSign` for
 * SignatureDoesNotMatch, `ServerTime` for RequestTimeTooSkewed), rendered by {@link s3ErrorXml}.
 */
export class S3Error extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra?: Record<string, string>,
  ) {
    super(message);
    this.name = "S3Error";
  }
}

/**
 * Characters XML 1.0 does not allow in a document at all, even escaped (XML 1.0 §2.2 "Char"):
 * C0 controls other than tab, LF and CR, U+FFFE/U+FFFF, and lone surrogates.
 */
const NOT_XML_CHAR = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Escapes text for an XML element's content (XML 1.0 §2.4): `& < >` and, harmlessly, quotes; characters XML cannot carry become U+FFFD. */
export function xmlText(text: string): string {
  return text
    .replace(NOT_XML_CHAR, "\uFFFD")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&apos;");
}

/** An element name S3 uses for its extras (ASCII letters, digits, `-`, `_`, `.`): XML 1.0 §2.3 "Name", restricted. */
const ELEMENT_NAME = /^[A-Za-z_][A-Za-z0-9._-]*$/;

/**
 * The XML body of an S3 error response (AWS S3 API Reference, "Error responses"; REST error
 * responses carry `Code`, `Message`, `Resource`, `RequestId`, then code-specific elements).
 * @param resource the bucket or object the request was for (S3 uses the request path)
 * @param requestId the request's id, also sent as `x-amz-request-id`
 * @throws TypeError when an extra's name is not an element name (a programming error)
 */
export function s3ErrorXml(err: S3Error, resource: string, requestId: string): string {
  let extras = "";
  for (const [name, value] of Object.entries(err.extra ?? {})) {
    if (!ELEMENT_NAME.test(name)) throw new TypeError(`S3Error extra "${name}" is not an XML element name`);
    extras += `<${name}>${xmlText(value)}</${name}>`;
  }
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n` +
    `<Error><Code>${xmlText(err.code)}</Code><Message>${xmlText(err.message)}</Message>` +
    `<Resource>${xmlText(resource)}</Resource><RequestId>${xmlText(requestId)}</RequestId>${extras}</Error>`
  );
}
