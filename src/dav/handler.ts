/**
 * WebDAV at `/dav/` (RFC 4918 class 1 and 2, CONTRACT §12), served on the exchange
 * (serving/exchange.ts) whatever the wire, one handler per method. Authentication is HTTP Basic
 * (RFC 7617) with any user name and an API key as the password, checked by the Authenticator
 * as a bearer key is (its failed-authentication rate limit included); a session cookie is never
 * looked at, so no other site can make a browser change anything here. Scopes apply: the
 * services check files.read and files.write, LOCK, UNLOCK and PROPPATCH ask for files.write.
 */
import type { Authenticator, HeaderSource, RequestLike } from "../auth/principal.ts";
import type { Principal } from "../domain/principal.ts";
import { AppError, httpStatusOf } from "../errors.ts";
import { contentReply } from "../serving/content-reply.ts";
import { answerContent } from "../serving/content.ts";
import { errorAnswer, failed, type Exchange } from "../serving/exchange.ts";
import { QuotaExceededError } from "../service/quota.ts";
import { copyOrMove, del, mkcol, put } from "./changes.ts";
import { DavError } from "./errors.ts";
import { lock, unlock } from "./lock-methods.ts";
import { hrefOf, segmentsOf } from "./paths.ts";
import { propfind, proppatch } from "./props.ts";
import { DavRequest, type DavDeps } from "./request.ts";
import { memberPages } from "./resources.ts";
import { answerText } from "../serving/text-answer.ts";
import { Slicer } from "../slices.ts";
import { escapeXml } from "./xml.ts";

export type { DavDeps } from "./request.ts";

/** What the methods answer to OPTIONS and a 405 (RFC 9110 §10.2.1). */
const ALLOW = "OPTIONS, GET, HEAD, PUT, DELETE, MKCOL, COPY, MOVE, PROPFIND, PROPPATCH, LOCK, UNLOCK";

/** The challenge of a 401 (RFC 7617 §2). */
const CHALLENGE = 'Basic realm="cubby", charset="UTF-8"';

type Handler = (req: DavRequest) => Promise<void>;

const METHODS: Readonly<Record<string, Handler>> = {
  OPTIONS: options,
  GET: get,
  HEAD: get,
  PUT: put,
  DELETE: del,
  MKCOL: mkcol,
  COPY: (req) => copyOrMove(req, false),
  MOVE: (req) => copyOrMove(req, true),
  PROPFIND: propfind,
  PROPPATCH: proppatch,
  LOCK: lock,
  UNLOCK: unlock,
};

/** What serveDav needs beyond the tree: who is calling. */
export interface DavServeDeps extends DavDeps {
  auth: Authenticator;
}

/** Answers one request under `/dav` (its context opened by the dispatch); never rejects. */
export async function serveDav(deps: DavServeDeps, ex: Exchange): Promise<void> {
  try {
    const handler = METHODS[ex.method];
    if (handler === undefined) throw new DavError(405, `${ex.method} is not a WebDAV method cubby serves`);
    const segments = segmentsOf(ex.pathname);
    const principal = await authenticate(deps.auth, ex);
    await handler(new DavRequest(deps, ex, principal, segments));
  } catch (err) {
    if (!ex.gone) answerError(ex, err);
  }
}

/**
 * The principal of an `Authorization: Basic` header whose password is an API key.
 * @throws AppError unauthenticated (no or bad credentials), resource_exhausted (rate limited)
 */
async function authenticate(auth: Authenticator, ex: Exchange): Promise<Principal> {
  const m = /^Basic[ ]+([A-Za-z0-9+/=]+)[ ]*$/i.exec(ex.headers.get("authorization") ?? "");
  if (m === null) throw new AppError("unauthenticated", "send HTTP Basic credentials: any user name, an API key as the password");
  const decoded = Buffer.from(m[1]!, "base64").toString("utf8");
  const key = decoded.slice(decoded.indexOf(":") + 1);
  // The key goes to the Authenticator as a bearer token; cookies are not looked at.
  const headers: HeaderSource = { get: (name) => (name === "authorization" ? `Bearer ${key}` : name === "cookie" ? null : ex.headers.get(name)) };
  const request: RequestLike = { method: ex.method, headers, clientAddress: ex.clientAddress, context: ex.context };
  return auth.require(request);
}

/** Answers OPTIONS (RFC 4918 §10.1: class 1 and 2). */
async function options(req: DavRequest): Promise<void> {
  req.ex.respond(200, { dav: "1, 2", allow: ALLOW, "ms-author-via": "DAV", "content-length": "0" });
}

/** Answers GET and HEAD: a file's content as its content URL sends it (ranges, conditionals), a collection as a small HTML list. */
async function get(req: DavRequest): Promise<void> {
  const { resource } = await req.resolve();
  if (resource === undefined) throw new DavError(404, "nothing at this path");
  await req.checkIf(resource);
  if (resource.kind === "file") {
    const reply = contentReply(resource.file, req.ex, undefined, req.deps.baseUrl());
    await answerContent(req.ex, { reply, content: req.deps.files.contentOf(resource.file) });
    return;
  }
  // A page of members at a time, streamed past 1 MiB (serving/text-answer.ts): a collection of
  // any size costs what its listing sends (CONTRACT §14).
  const collection = resource;
  const title = escapeXml(hrefOf(req.segments, true));
  async function* parts(): AsyncIterable<string> {
    yield `<!doctype html><meta charset="utf-8"><title>${title}</title><h1>${title}</h1><ul>`;
    const slicer = new Slicer();
    for await (const members of memberPages(req.deps, req.principal, collection)) {
      yield members
        .map((m) => {
          const href = hrefOf([...req.segments, m.name], m.resource.kind !== "file");
          return `<li><a href="${escapeXml(href)}">${escapeXml(m.name)}${m.resource.kind === "file" ? "" : "/"}</a></li>`;
        })
        .join("");
      await slicer.breathe();
    }
    yield "</ul>";
  }
  await answerText(req.ex, 200, { "content-type": "text/html; charset=utf-8", "x-content-type-options": "nosniff", "content-security-policy": "default-src 'none'" }, parts());
}

/** Writes the answer to an error: DavError's status and DAV:error body, or an AppError's JSON (401 with the Basic challenge, a quota 507). */
function answerError(ex: Exchange, err: unknown): void {
  if (err instanceof DavError) {
    if (err.condition !== undefined) {
      const body = `<?xml version="1.0" encoding="utf-8"?>\n<D:error xmlns:D="DAV:"><D:${err.condition}>${err.conditionBody}</D:${err.condition}></D:error>`;
      ex.respond(err.status, { "content-type": 'application/xml; charset="utf-8"' }, body);
    } else {
      ex.respond(err.status, { "content-type": "text/plain; charset=utf-8", ...(err.status === 405 ? { allow: ALLOW } : {}) }, `${err.message}\n`);
    }
    return;
  }
  if (!(err instanceof AppError)) return failed(ex, err, ex.context);
  const { headers, body } = errorAnswer(err);
  // RFC 4918 §11.5: a quota is 507 Insufficient Storage.
  const status = err instanceof QuotaExceededError ? 507 : httpStatusOf(err.code);
  ex.respond(status, err.code === "unauthenticated" ? { ...headers, "www-authenticate": CHALLENGE } : headers, body);
}
