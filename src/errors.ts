/**
 * One error model for every transport (CONTRACT §2 "Errors"). Services throw {@link AppError};
 * REST renders it as `google.rpc.Status` JSON with {@link httpStatusOf}, RPC as a ConnectError
 * with {@link grpcCodeOf}. Anything else thrown becomes `internal` with the original as `cause`.
 */

/**
 * Error kinds, named after the gRPC code they carry. Two HTTP statuses share a gRPC code
 * (413 and 429 are both RESOURCE_EXHAUSTED; 415 is INVALID_ARGUMENT), so those get their own
 * kind rather than an ad-hoc status override.
 */
export type ErrorCode =
  | "invalid_argument"
  | "unsupported_media_type"
  | "unauthenticated"
  | "permission_denied"
  | "not_found"
  | "already_exists"
  | "gone"
  | "payload_too_large"
  | "resource_exhausted"
  | "aborted"
  | "failed_precondition"
  | "checksum_mismatch"
  | "unavailable"
  | "internal";

/** gRPC status codes (https://grpc.github.io/grpc/core/md_doc_statuscodes.html). */
export const GrpcCode = {
  INVALID_ARGUMENT: 3,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  FAILED_PRECONDITION: 9,
  RESOURCE_EXHAUSTED: 8,
  ABORTED: 10,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

const mapping = {
  invalid_argument: { http: 400, grpc: GrpcCode.INVALID_ARGUMENT },
  unsupported_media_type: { http: 415, grpc: GrpcCode.INVALID_ARGUMENT },
  unauthenticated: { http: 401, grpc: GrpcCode.UNAUTHENTICATED },
  permission_denied: { http: 403, grpc: GrpcCode.PERMISSION_DENIED },
  not_found: { http: 404, grpc: GrpcCode.NOT_FOUND },
  // A name a folder holds already (CONTRACT §12): 409 Conflict.
  already_exists: { http: 409, grpc: GrpcCode.ALREADY_EXISTS },
  // A share or upload link that existed and no longer serves (CONTRACT §8): 410 Gone.
  gone: { http: 410, grpc: GrpcCode.FAILED_PRECONDITION },
  payload_too_large: { http: 413, grpc: GrpcCode.RESOURCE_EXHAUSTED },
  resource_exhausted: { http: 429, grpc: GrpcCode.RESOURCE_EXHAUSTED },
  // tus (CONTRACT §8): a PATCH at an offset that is not the upload's (409 Conflict; a link or
  // upload that no longer takes uploads is `gone` above), an unsupported Tus-Resumable (412), and a
  // chunk whose Upload-Checksum does not match (460 Checksum Mismatch, the contract's code 3).
  aborted: { http: 409, grpc: GrpcCode.ABORTED },
  failed_precondition: { http: 412, grpc: GrpcCode.FAILED_PRECONDITION },
  checksum_mismatch: { http: 460, grpc: GrpcCode.INVALID_ARGUMENT },
  unavailable: { http: 503, grpc: GrpcCode.UNAVAILABLE },
  internal: { http: 500, grpc: GrpcCode.INTERNAL },
} as const satisfies Record<ErrorCode, { http: number; grpc: number }>;

/** An error the caller is meant to see: a code and a human-readable message. */
export class AppError extends Error {
  override name = "AppError";
  /** For rate limiting: seconds the client should wait (sent as Retry-After). */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown; retryAfterSeconds?: number },
  ) {
    super(message, options);
    this.retryAfterSeconds = options?.retryAfterSeconds;
  }
}

/** HTTP status for an error code (CONTRACT §2 table). */
export function httpStatusOf(code: ErrorCode): number {
  return mapping[code].http;
}

/** gRPC status code number for an error code (CONTRACT §2 table). */
export function grpcCodeOf(code: ErrorCode): number {
  return mapping[code].grpc;
}

/** The JSON body of a failure: `google.rpc.Status` with no details. */
export interface RpcStatus {
  code: number;
  message: string;
  details: never[];
}

/**
 * Turns anything thrown into an AppError. Disk-full, out-of-descriptors and database-busy
 * conditions become `unavailable` (503) because retrying later can succeed; everything else becomes
 * `internal` with the message "internal error" and the original kept as `cause` for the log.
 */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (code === "ENOSPC" || code === "EDQUOT" || code === "SQLITE_FULL") {
    return new AppError("unavailable", "storage is full; try again later", { cause: err });
  }
  if (code === "EMFILE" || code === "ENFILE") {
    return new AppError("unavailable", "too many open files; try again later", { cause: err });
  }
  if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED") {
    return new AppError("unavailable", "database is busy; try again later", { cause: err });
  }
  return new AppError("internal", "internal error", { cause: err });
}

/** Renders an AppError as `google.rpc.Status` JSON (CONTRACT §2). */
export function toRpcStatus(err: AppError): RpcStatus {
  return { code: grpcCodeOf(err.code), message: err.message, details: [] };
}

/**
 * The HTTP headers every rendering of `error` carries besides its body's: `WWW-Authenticate:
 * Bearer` with a 401 (RFC 6750 §3), `Retry-After` when it says how long to wait (RFC 9110 §10.2.3).
 */
export function errorHeaders(error: AppError): Record<string, string> {
  const headers: Record<string, string> = {};
  if (error.code === "unauthenticated") headers["www-authenticate"] = 'Bearer realm="cubby"';
  if (error.retryAfterSeconds !== undefined) headers["retry-after"] = String(error.retryAfterSeconds);
  return headers;
}

