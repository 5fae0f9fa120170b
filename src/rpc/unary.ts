/**
 * The unary fast path (issue 16): FileService's unary methods in their plain forms, answered
 * straight from the decoded message, beside connect-node, whose universal-handler plumbing
 * (async iterables, AbortControllers, `Headers`, envelope pipelines) was most of a call's cost.
 *
 * Taken here ({@link unaryFormOf}):
 * - Connect unary (https://connectrpc.com/docs/protocol#unary-request): `POST` with
 *   `application/json` or `application/proto`, no Content-Encoding (or `identity`), and no
 *   Content-Length over {@link MAX_MESSAGE_BYTES};
 * - gRPC over HTTP/2 (grpc/doc/PROTOCOL-HTTP2.md): `application/grpc` or `application/grpc+proto`
 *   with no `grpc-encoding` (or `identity`).
 *
 * Everything else — streams, gRPC-Web, Connect GET, compressed requests, JSON gRPC, gRPC over
 * HTTP/1.1, reflection — goes to connect-node, as does any request this path does not know.
 *
 * What connect-node (2.1.2, pinned) answers for these forms is reproduced, with its own pure
 * helpers where it exports them, so that messages and codes cannot drift: the (de)serialisers
 * and their size limits (`createMethodSerializationLookup`), the timeout parsers, the response
 * compression negotiation (gzip and br from 1 KiB, as connectNodeAdapter configures), the Connect
 * error JSON and its HTTP status, the gRPC status trailers (`setTrailerStatus`, with
 * `grpc-status-details-bin` when an error has details). Calls are counted by `observe` exactly
 * where the Metrics interceptor counts connect-node's: when the implementation returns or throws.
 */
import { create } from "@bufbuild/protobuf";
import type { DescMethodUnary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { compressionNegotiate, createMethodSerializationLookup, type Compression } from "@connectrpc/connect/protocol";
import { codeToHttpStatus, errorToJsonBytes, parseTimeout as parseConnectTimeout } from "@connectrpc/connect/protocol-connect";
import { parseTimeout as parseGrpcTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { report } from "../context/report.ts";
import type { RequestContext } from "../context/request-context.ts";
import { FileService } from "../gen/cubby/v1/files_pb.ts";
import { toConnectError } from "./errors.ts";
import type { FileUnaryMethods, RpcCaller, UnaryMethodName } from "./file-service.ts";
import { MAX_MESSAGE_BYTES, RPC_OPTIONS } from "./index.ts";

type NodeRequest = IncomingMessage | Http2ServerRequest;
type NodeResponse = ServerResponse | Http2ServerResponse;

/**
 * Answers one RPC request if it is a unary call in a form this path takes.
 * @returns false, having touched nothing, when the request is for connect-node
 */
export type UnaryFastPath = (req: NodeRequest, res: NodeResponse, context: RequestContext) => boolean;

/** Counts one finished call (Metrics.observeRpc): its procedure path and code, undefined for OK. */
export type CallObserver = (procedure: string, code: Code | undefined) => void;

/** The wire forms this path takes. */
export type UnaryForm = "connect+json" | "connect+proto" | "grpc";

const UNARY_METHODS: readonly UnaryMethodName[] = ["getFile", "listFiles", "updateFile", "publishFile", "unpublishFile", "deleteFile", "updateFileExpiry"];

/** connect-node's compressions, in its order (connectNodeAdapter's default `acceptCompression`). */
const COMPRESSIONS: Compression[] = [compressionGzip, compressionBrotli];
/** Responses smaller than this are not compressed (connect-es's default `compressMinBytes`). */
const COMPRESS_MIN_BYTES = 1024;
/** connect-es's `maxTimeoutMs` when none is configured: any deadline is accepted. */
const MAX_TIMEOUT_MS = Number.MAX_SAFE_INTEGER;
/** The gRPC length-prefixed message's header: compressed flag (1 byte), length (4 bytes, big-endian). */
const PREFIX_BYTES = 5;

/** Connect unary content types (connect-es's `contentTypeUnaryRegExp`); group 1 is set for binary. */
const CONNECT_UNARY_TYPE = /^application\/(?:json(?:; ?charset=utf-?8)?|(proto))$/i;
/** gRPC's binary content types (JSON gRPC is left to connect-node). */
const GRPC_PROTO_TYPE = /^application\/grpc(?:\+proto)?$/i;

interface Route {
  procedure: string;
  method: DescMethodUnary;
  serialization: ReturnType<typeof createMethodSerializationLookup>;
  call: (req: never, caller: RpcCaller) => Promise<Record<string, unknown>>;
}

export interface UnaryFastPathOptions {
  /** Told of every call the implementation answered (cubby_rpc_handled_total). */
  observe?: CallObserver;
  /**
   * Prepares an HTTP/1.1 response sent before its request body was read to the end (a body
   * over the limit): the connection must close after it rather than parse the rest as a request.
   */
  closeAfter?: (req: NodeRequest, res: NodeResponse) => void;
}

/** The fast path for `methods` (fileUnaryMethods). */
export function unaryFastPath(methods: FileUnaryMethods, opts: UnaryFastPathOptions = {}): UnaryFastPath {
  const routes = new Map<string, Route>();
  for (const name of UNARY_METHODS) {
    const method = FileService.method[name] as DescMethodUnary;
    const procedure = `/${FileService.typeName}/${method.name}`;
    const serialization = createMethodSerializationLookup(method, undefined, RPC_OPTIONS.jsonOptions, { readMaxBytes: MAX_MESSAGE_BYTES, writeMaxBytes: MAX_MESSAGE_BYTES });
    routes.set(procedure, { procedure, method, serialization, call: methods[name] as Route["call"] });
  }
  return (req, res, context) => {
    if (req.method !== "POST") return false;
    const url = req.url ?? "";
    const q = url.indexOf("?");
    const route = routes.get(q === -1 ? url : url.slice(0, q));
    if (route === undefined) return false;
    const form = unaryFormOf(req);
    if (form === undefined) return false;
    serve(route, form, req, res, context, opts).catch((err: unknown) => {
      // Only writing the answer itself can fail here (compression, a closed stream): the
      // connection is the one left to tell.
      report(err, context);
      res.destroy();
    });
    return true;
  };
}

/**
 * The form of a unary request this path takes, from its headers; undefined for any other (for
 * connect-node).
 */
export function unaryFormOf(req: NodeRequest): UnaryForm | undefined {
  const h = req.headers;
  const type = h["content-type"];
  if (type === undefined) return undefined;
  if (req.httpVersionMajor === 2 && GRPC_PROTO_TYPE.test(type)) return identity(h["grpc-encoding"]) ? "grpc" : undefined;
  const connect = CONNECT_UNARY_TYPE.exec(type);
  if (connect === null || !identity(h["content-encoding"]) || !identity(h["connect-content-encoding"])) return undefined;
  const length = h["content-length"];
  if (length !== undefined && (!/^\d{1,10}$/.test(length) || Number(length) > MAX_MESSAGE_BYTES)) return undefined;
  return connect[1] === undefined ? "connect+json" : "connect+proto";
}

function identity(encoding: string | string[] | undefined): boolean {
  return encoding === undefined || encoding === "identity";
}

/** One request header as a string (a repeated one joined as a list, RFC 9110 §5.3). */
function headerOf(req: NodeRequest, name: string): string | null {
  const v = req.headers[name];
  if (v === undefined) return null;
  return Array.isArray(v) ? v.join(name === "cookie" ? "; " : ", ") : v;
}

async function serve(route: Route, form: UnaryForm, req: NodeRequest, res: NodeResponse, context: RequestContext, opts: UnaryFastPathOptions): Promise<void> {
  const { observe } = opts;
  const grpc = form === "grpc";
  const binary = form !== "connect+json";
  // Negotiated before anything can fail: an error is compressed (and labelled) like an answer.
  const compression = compressionNegotiate(COMPRESSIONS, null, headerOf(req, grpc ? "grpc-accept-encoding" : "accept-encoding"), "").response;
  const timeout = grpc ? parseGrpcTimeout(headerOf(req, "grpc-timeout"), MAX_TIMEOUT_MS) : parseConnectTimeout(headerOf(req, "connect-timeout-ms"), MAX_TIMEOUT_MS);
  // Whole milliseconds, as connect-es's HandlerContext keeps it (a Date): a deadline under 1 ms has passed.
  const deadline = timeout.timeoutMs === undefined ? undefined : Math.trunc(Date.now() + timeout.timeoutMs);
  let answered = false;
  try {
    // connect-node refuses a malformed gRPC deadline before it reads; a Connect body (bounded by
    // its Content-Length) is read first, so that nothing of it stays on an HTTP/1.1 connection.
    if (grpc && timeout.error !== undefined) throw timeout.error;
    const body = grpc ? await readGrpcMessage(req) : await readBody(req);
    if (timeout.error !== undefined) throw timeout.error;
    const input = route.serialization.getI(binary).parse(body);
    const caller: RpcCaller = {
      method: "POST",
      headers: { get: (name) => headerOf(req, name.toLowerCase()) },
      context,
      timeLeftMs: () => (deadline === undefined ? undefined : deadline - Date.now()),
    };
    let output: Record<string, unknown>;
    try {
      output = await route.call(input as never, caller);
    } catch (err) {
      const error = toConnectError(err, context);
      observe?.(route.procedure, error.code);
      throw error;
    }
    observe?.(route.procedure, undefined);
    const message = route.serialization.getO(binary).serialize(create(route.method.output, output));
    answered = true;
    if (grpc) await answerGrpc(req, res, message, compression);
    else await answerConnect(req, res, 200, binary ? "application/proto" : "application/json", message, compression);
  } catch (err) {
    if (answered || responseGone(res)) return;
    const error = err instanceof ConnectError ? err : new ConnectError("internal error", Code.Internal, undefined, undefined, err);
    // A body the error left unread is not waited for (an HTTP/2 stream is reset once answered).
    if (!req.complete) {
      if (req.httpVersionMajor === 1) opts.closeAfter?.(req, res);
      else req.resume();
    }
    if (grpc) failGrpc(req, res, error, compression);
    else await failConnect(req, res, error, compression);
  }
}

function responseGone(res: NodeResponse): boolean {
  return res.headersSent || res.destroyed || res.writableEnded;
}

/**
 * Runs `write` with the connection corked, so that what it writes leaves in one write to the
 * socket: Bun's node:http writes a response's head and body separately, node:http2 each frame.
 */
function corked(req: NodeRequest, write: () => void): void {
  const socket = req.socket;
  if (socket === null || socket === undefined) return write();
  socket.cork();
  try {
    write();
  } finally {
    socket.uncork();
  }
}

/**
 * A Connect unary response (status, Content-Type, Content-Length, the body compressed when the
 * client accepts gzip or br and it has 1 KiB or more) in one write.
 */
async function answerConnect(req: NodeRequest, res: NodeResponse, status: number, contentType: string, body: Uint8Array, compression: Compression | null, extra?: Record<string, string>): Promise<void> {
  const headers: Record<string, string> = { ...extra, "content-type": contentType };
  if (compression !== null && body.byteLength >= COMPRESS_MIN_BYTES) {
    body = await compression.compress(body);
    headers["content-encoding"] = compression.name;
  }
  headers["content-length"] = String(body.byteLength);
  if (responseGone(res)) return;
  corked(req, () => {
    (res as ServerResponse).writeHead(status, headers);
    (res as ServerResponse).end(body);
  });
}

/** A Connect unary error: `{code, message, details}` JSON with the code's HTTP status (Connect protocol, "Error Codes"). */
function failConnect(req: NodeRequest, res: NodeResponse, error: ConnectError, compression: Compression | null): Promise<void> {
  const extra: Record<string, string> = {};
  error.metadata.forEach((value, key) => {
    extra[key] = value;
  });
  return answerConnect(req, res, codeToHttpStatus(error.code), "application/json", errorToJsonBytes(error, RPC_OPTIONS.jsonOptions), compression, extra);
}

/** Response headers of a gRPC answer: the content type connect-node answers with, and the negotiated encoding. */
function grpcHeaders(compression: Compression | null): Record<string, string> {
  return compression === null ? { "content-type": "application/grpc+proto" } : { "content-type": "application/grpc+proto", "grpc-encoding": compression.name };
}

/** A gRPC answer: headers, one length-prefixed message, trailers `grpc-status: 0`. */
async function answerGrpc(req: NodeRequest, res: NodeResponse, message: Uint8Array, compression: Compression | null): Promise<void> {
  let flags = 0;
  if (compression !== null && message.byteLength >= COMPRESS_MIN_BYTES) {
    message = await compression.compress(message);
    flags = 1;
  }
  const frame = Buffer.allocUnsafe(PREFIX_BYTES + message.byteLength);
  frame[0] = flags;
  frame.writeUInt32BE(message.byteLength, 1);
  frame.set(message, PREFIX_BYTES);
  if (responseGone(res)) return;
  const writer = res as Http2ServerResponse;
  corked(req, () => {
    writer.writeHead(200, grpcHeaders(compression));
    writer.addTrailers({ "grpc-status": "0" });
    writer.end(frame);
  });
}

/** A gRPC error: headers, no message, the status in the trailers (`grpc-status`, percent-encoded `grpc-message`, details). */
function failGrpc(req: NodeRequest, res: NodeResponse, error: ConnectError, compression: Compression | null): void {
  const trailers: Record<string, string> = {};
  setTrailerStatus(new Headers(), error).forEach((value, key) => {
    trailers[key] = value;
  });
  const writer = res as Http2ServerResponse;
  corked(req, () => {
    writer.writeHead(200, grpcHeaders(compression));
    writer.addTrailers(trailers);
    writer.end();
  });
}

/**
 * The whole request body of a Connect unary call, up to {@link MAX_MESSAGE_BYTES}.
 * @throws ConnectError resource_exhausted past the limit; invalid_argument when the body is
 *   shorter or longer than its Content-Length; canceled when the client goes away
 */
function readBody(req: NodeRequest): Promise<Uint8Array> {
  const length = headerOf(req, "content-length");
  const promised = length === null ? undefined : Number(length);
  return collect(req, (chunks, total, ended) => {
    if (promised !== undefined) {
      if (total > promised || (ended && total < promised)) throw new ConnectError(`protocol error: promised ${promised} bytes, received ${total}`, Code.InvalidArgument);
    } else if (total > MAX_MESSAGE_BYTES) throw new ConnectError(`message size is larger than configured readMaxBytes ${MAX_MESSAGE_BYTES}`, Code.ResourceExhausted);
    return ended ? concat(chunks, total) : undefined;
  });
}

/**
 * The one message of a gRPC unary request (its length-prefixed form unwrapped), checked as
 * connect-node checks it: the declared length against the limit as soon as the prefix is in,
 * a compressed flag (no grpc-encoding was sent), a second message, a truncated one.
 */
function readGrpcMessage(req: NodeRequest): Promise<Uint8Array> {
  // The bytes are joined only when enough have come to decide something: at most four times.
  let need = PREFIX_BYTES;
  let size = -1;
  let first: Uint8Array | undefined;
  return collect(req, (chunks, total, ended) => {
    if (total < need && !ended) return undefined;
    if (total < PREFIX_BYTES) {
      if (total === 0) throw new ConnectError("protocol error: missing input message for unary method", Code.Unimplemented);
      throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
    }
    const all = concat(chunks.splice(0), total);
    chunks.push(all);
    if (size === -1) {
      size = lengthAt(all, 0);
      need = PREFIX_BYTES + size;
    }
    if (first === undefined) {
      if (total < PREFIX_BYTES + size) {
        if (ended) throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
        return undefined;
      }
      if ((all[0]! & 1) === 1) throw new ConnectError("received compressed envelope, but do not know how to decompress", Code.Internal);
      first = all.subarray(PREFIX_BYTES, PREFIX_BYTES + size);
      need = 2 * PREFIX_BYTES + size;
    }
    const rest = total - PREFIX_BYTES - size;
    if (rest === 0) return ended ? first : undefined;
    if (rest >= PREFIX_BYTES) {
      // A second message: connect-node refuses it once it is complete.
      const next = lengthAt(all, PREFIX_BYTES + size);
      if (rest >= PREFIX_BYTES + next) throw new ConnectError("protocol error: received extra input message for unary method", Code.Unimplemented);
      need = 2 * PREFIX_BYTES + size + next;
    }
    if (ended) throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
    return undefined;
  });
}

/**
 * A length prefix's message length at `offset`.
 * @throws ConnectError resource_exhausted over {@link MAX_MESSAGE_BYTES} (connect-es's envelope decoder's message)
 */
function lengthAt(bytes: Uint8Array, offset: number): number {
  const size = ((bytes[offset + 1]! << 24) >>> 0) + (bytes[offset + 2]! << 16) + (bytes[offset + 3]! << 8) + bytes[offset + 4]!;
  if (size > MAX_MESSAGE_BYTES) throw new ConnectError(`message size ${size} is larger than configured readMaxBytes ${MAX_MESSAGE_BYTES}`, Code.ResourceExhausted);
  return size;
}

/**
 * Reads `req`'s body chunk by chunk, asking `step` after each chunk and at the end what it
 * makes of the bytes so far: a result ends the read, undefined reads on, a throw fails it.
 */
function collect(req: NodeRequest, step: (chunks: Uint8Array[], total: number, ended: boolean) => Uint8Array | undefined): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let total = 0;
    const done = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onGone);
      req.off("close", onGone);
    };
    const check = (ended: boolean) => {
      let result: Uint8Array | undefined;
      try {
        result = step(chunks, total, ended);
      } catch (err) {
        done();
        return reject(err);
      }
      if (result !== undefined) {
        done();
        resolve(result);
      }
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      total += chunk.byteLength;
      check(false);
    };
    const onEnd = () => check(true);
    const onGone = () => {
      done();
      reject(new ConnectError("the client went away before the request was complete", Code.Canceled));
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onGone);
    req.on("close", onGone);
  });
}

function concat(chunks: Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  return Buffer.concat(chunks, total);
}
