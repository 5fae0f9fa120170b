/**
 * Where content URLs (`/{id}`, `/{id}/{slug}`, CONTRACT §3) and share links (`/s/{token}`,
 * CONTRACT §8) are answered, for every wire (GET and HEAD, routed here by server/dispatch.ts):
 * what to answer is decided by serving/content-reply.ts (access, then the pure `contentReply`) and
 * serving/share-reply.ts; this module writes it on the {@link Exchange}, and is the one place
 * that sends a file's bytes.
 *
 * The request a file sharing service answers most, a GET of a file whose row is in the read
 * cache and whose small content is in the blob cache, public or opened by a bearer key whose
 * row and user are cached, needs no I/O: {@link decideContent} decides it now (NowOrLater,
 * domain/later.ts) and {@link serveContent} answers it before it returns, with no promise,
 * closure, listener or AbortController (on HTTP/1.1 head and body leave in one `write`).
 * Everything else takes the rest of the same function: the lookups, the rate limit's charge of
 * failed credentials, errors, share links, downloads streamed from the store.
 */
import { isFileId } from "../domain/ids.ts";
import { isNow, settle, type Later, type NowOrLater } from "../domain/later.ts";
import { contentReply, openContent, type ContentDeps, type ContentReply, type ContentRequest, type Sent } from "./content-reply.ts";
import { shareReply, type ShareContentDeps } from "./share-reply.ts";
import type { FileContent } from "../service/files.ts";
import type { ByteRange } from "../storage/ports.ts";
import { failed, type Buffering, type Exchange, type Outgoing } from "./exchange.ts";
import { writeFolderZip } from "./folder-zip.ts";

/** What content URLs and share links are answered with. */
export interface ContentOptions {
  deps: ContentDeps & ShareContentDeps;
  /** Whether an answer decided now is written now; false only in tests (CUBBY_TEST_AT_ONCE=off), to compare. */
  atOnce: boolean;
}

/** A content URL's file ID and slug (percent-decoded; undefined for the ID-only form). */
export interface ContentTarget {
  id: string;
  slug: string | undefined;
}

/** `/{21-char id}` or `/{21-char id}/{one segment}`. */
const CONTENT_PATH = /^\/([A-Za-z0-9_-]{21})(?:\/([^/]+))?$/;

/**
 * The file ID and slug when `pathname` is a content URL; undefined otherwise. The slug is
 * percent-decoded (an undecodable one is kept as sent: it matches no slug, so it redirects).
 */
export function contentTarget(pathname: string): ContentTarget | undefined {
  const m = CONTENT_PATH.exec(pathname);
  if (m === null) return undefined;
  const raw = m[2];
  if (raw === undefined || !raw.includes("%")) return { id: m[1]!, slug: raw };
  try {
    return { id: m[1]!, slug: decodeURIComponent(raw) };
  } catch {
    return { id: m[1]!, slug: raw };
  }
}

/** `/s/{token}`: a share link (CONTRACT §8); the token's shape is checked when it is looked up. */
const SHARE_PATH = /^\/s\/([A-Za-z0-9_-]{1,64})$/;

/** The token when `pathname` is a share URL; undefined otherwise. */
export function shareTarget(pathname: string): string | undefined {
  return SHARE_PATH.exec(pathname)?.[1];
}

/**
 * What a content answer is: the reply, and the file's content when the reply sends some of it,
 * or what writes a body of another kind (a shared folder's ZIP, folder-zip.ts) and ends it.
 */
export interface ContentDecision {
  reply: ContentReply;
  content?: FileContent | undefined;
  writeBody?: ((out: Outgoing, buffering: Buffering) => Promise<void>) | undefined;
  /** Told once the answer ended: the body's bytes handed to the wire, and whether all went out (a share's access log). */
  onSent?: ((sent: Sent) => void) | undefined;
}

/**
 * Answers GET or HEAD of a content URL on `ex` (its context opened by the dispatch): before
 * returning when {@link decideContent} decides now and the bytes are in memory, else once the
 * rest has run.
 */
export function serveContent(opts: ContentOptions, ex: Exchange, target: ContentTarget): void {
  const decision = decideContent(opts.deps, ex, target);
  if (opts.atOnce && isNow(decision) && answerWhole(ex, decision) !== undefined) return;
  void answerContent(ex, settle(decision));
}

/** Answers GET or HEAD of a share link, `/s/{token}` (serving/share-reply.ts decides; a lookup always). */
export function serveShare(opts: ContentOptions, ex: Exchange, token: string): void {
  const decided = shareReply(opts.deps, ex, token).then(({ reply, content, zipOf, onSent }): ContentDecision => {
    if (zipOf === undefined) return { reply, content, onSent };
    return { reply, writeBody: (out, buffering) => writeFolderZip(out, opts.deps, zipOf, buffering), onSent };
  });
  void answerContent(ex, decided);
}

/**
 * Decides the answer to a content URL (serving/content-reply.ts: access, then `contentReply`).
 *
 * Decided now ({@link NowOrLater}, domain/later.ts; no I/O) when the file's row is in the read
 * cache and it is public or opened by credentials the caches resolve (FileService.openContent,
 * Authenticator.optional), and the reply is not an error. Else the rest to run, which gives
 * every other answer and error.
 * @throws (the rest rejects) AppError (not_found, permission_denied, invalid_argument, …) as the
 *   lookup and `contentReply` do
 */
export function decideContent(deps: ContentDeps, request: ContentRequest, target: ContentTarget): NowOrLater<ContentDecision> {
  if (!isFileId(target.id)) return decideLater(deps, request, target, undefined);
  const content = deps.files.openContent(() => deps.auth.optional(request), target.id);
  if (isNow(content)) {
    try {
      return { reply: contentReply(content.file, request, target.slug, deps.baseUrl()), content };
    } catch {
      // A malformed `download` parameter: the rest answers 400.
    }
  }
  return decideLater(deps, request, target, content);
}

/**
 * The rest of {@link decideContent}; a function of its own, so that a request decided now
 * allocates no scope for it. `opened`: what FileService.openContent gave already.
 */
function decideLater(deps: ContentDeps, request: ContentRequest, target: ContentTarget, opened: NowOrLater<FileContent> | undefined): Later<ContentDecision> {
  return () => decideRest(deps, request, target, opened);
}

async function decideRest(deps: ContentDeps, request: ContentRequest, target: ContentTarget, opened: NowOrLater<FileContent> | undefined): Promise<ContentDecision> {
  const content = await openContent(deps, request, target.id, opened);
  if ("redirect" in content) return { reply: content.redirect };
  return { reply: contentReply(content.file, request, target.slug, deps.baseUrl()), content };
}

/**
 * Writes `decision` whole when it needs no read from the store: its own body, no body (HEAD,
 * redirects, 304, 416, empty files), or a range of content held in memory.
 * @returns the body's bytes written; undefined (nothing written) when the bytes must be read from the store
 */
function answerWhole(ex: Exchange, { reply, content, writeBody }: ContentDecision): number | undefined {
  if (writeBody !== undefined) return undefined;
  const range = reply.range;
  if (reply.body !== undefined || range === undefined || ex.method === "HEAD" || content === undefined) {
    ex.respond(reply.status, reply.headers, reply.body);
    return ex.method === "HEAD" || reply.body === undefined ? 0 : Buffer.byteLength(reply.body);
  }
  const cached = content.cached;
  if (cached === undefined) return undefined;
  ex.respond(reply.status, reply.headers, range.start === 0 && range.length === cached.byteLength ? cached : cached.subarray(range.start, range.start + range.length));
  return range.length;
}

/**
 * Writes what `decided` answers: whole when it can ({@link answerWhole}), else the head and the
 * content's range streamed from the store. Errors are reported and become the usual
 * `google.rpc.Status` JSON; a failure after the head went out resets the answer. The one way a
 * file's bytes are sent: content URLs, share links and WebDAV's GET (dav/handler.ts) use it.
 */
export async function answerContent(ex: Exchange, decided: ContentDecision | Promise<ContentDecision>): Promise<void> {
  let out: Outgoing | undefined;
  let decision: ContentDecision | undefined;
  const sent: Sent = { bytes: 0, completed: false };
  try {
    decision = await decided;
    if (ex.gone) return;
    const whole = answerWhole(ex, decision);
    if (whole !== undefined) {
      sent.bytes = whole;
      sent.completed = true;
      return;
    }
    out = ex.stream(decision.reply.status, decision.reply.headers);
    const counted = decision.onSent === undefined ? out : countingBytes(out, sent);
    // HEAD of a body written as it goes: its head as GET's, no length, nothing after it.
    if (decision.writeBody !== undefined) await (ex.method === "HEAD" ? out.end() : decision.writeBody(counted, ex.buffering));
    else await writeContent(counted, decision.content!, decision.reply.range!, ex.buffering);
    sent.completed = !out.signal.aborted;
  } catch (err) {
    failed(ex, err, ex.context, out);
  } finally {
    decision?.onSent?.(sent);
  }
}

/** `out`, counting into `sent.bytes` what is written through it. */
function countingBytes(out: Outgoing, sent: Sent): Outgoing {
  return {
    signal: out.signal,
    write: (chunk, callback) => {
      sent.bytes += chunk.byteLength;
      out.write(chunk, callback);
    },
    end: () => out.end(),
    fail: () => out.fail(),
  };
}

/**
 * Sends `range` of a file's content from the store, chunk by chunk, each chunk released (and its
 * buffer refilled) only in the write's callback, and ends the answer. Stops, releasing the blob
 * and its buffers, as soon as the client goes (`out.signal`: connection closed, stream reset,
 * GOAWAY, session closed or timed out, a write failed).
 * @param buffering the chunk size and count of buffers held at once (the wire's)
 * @throws what reading the blob throws (the caller resets the answer)
 */
export async function writeContent(out: Outgoing, content: FileContent, range: ByteRange, buffering: Buffering): Promise<void> {
  if (content.cached !== undefined) {
    out.write(content.cached.subarray(range.start, range.start + range.length), ignore);
    out.end();
    return;
  }
  const signal = out.signal;
  for await (const chunk of content.read(range, { ...buffering, signal })) {
    out.write(chunk.bytes, () => chunk.release());
    if (signal.aborted) break;
  }
  if (!signal.aborted) out.end();
}

function ignore(): void {}
