/**
 * A WebDAV answer that is not one of cubby's error codes (errors.ts): a status RFC 4918 names
 * (207's relatives 405, 409, 412, 415, 423, 424, 502, 507) and, where it defines one, the
 * precondition or postcondition element its `DAV:error` body carries (RFC 4918 §16).
 */
export class DavError extends Error {
  override name = "DavError";
  constructor(
    readonly status: number,
    message: string,
    /** The DAV:error child element's local name (`lock-token-submitted`, `propfind-finite-depth`, …). */
    readonly condition?: string,
    /** Extra XML inside the condition element (the `D:href`s of `lock-token-submitted`). */
    readonly conditionBody = "",
  ) {
    super(message);
  }
}
