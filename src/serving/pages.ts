/**
 * Small HTML pages for people (sign-in outcomes, share pages, errors of browser navigations),
 * styled by the dashboard's stylesheet, no script (CONTRACT §11: pages for people, JSON for
 * programs). Every page rendered on the server, these and the share, folder and guest upload
 * pages, starts with {@link pageHeader}, so a recipient's or a guest's pages look alike (CONTRACT §15).
 */
import { errorHeaders, httpStatusOf, toRpcStatus, type AppError } from "../errors.ts";

/** Text made safe for HTML content and attribute values (`&`, `<`, `>`, `"`, `'` as references). */
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const escape = escapeHtml;

/** The icon of every page (`<link rel="icon">`) and the mark in their header. */
export const ICON_PATH = "/assets/icon.svg";

/** The start of every page, up to `</head>`: charset, viewport, `{title} · cubby`, icon, stylesheet. */
export function pageHead(title: string, extraHead = ""): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · cubby</title><link rel="icon" href="${ICON_PATH}" type="image/svg+xml"><link rel="stylesheet" href="/app.css">${extraHead}</head>`;
}

/**
 * The bar at the top of every page rendered on the server (share, folder, password, sign-in,
 * error and guest upload pages): the icon and the name, as the dashboard's header shows them.
 * Not a link: a recipient or a guest has no dashboard here (CONTRACT §15), and the owner's pages
 * carry their own way back.
 */
export function pageHeader(): string {
  return `<header class="bar"><span class="brand"><img src="${ICON_PATH}" alt="" width="28" height="28">cubby</span></header>`;
}

/**
 * A page's `<body>` to the end of the document: {@link pageHeader}, then `content` (HTML,
 * escaped already) in a `<main>` of class `mainClass`.
 */
export function pageBody(content: string, mainClass = "narrow"): string {
  return `<body>${pageHeader()}<main class="${mainClass}">${content}</main></body></html>
`;
}

/** The headers of a page: HTML, never cached, no script (CSP), no sniffing. */
const PAGE_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "content-security-policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  // A page's URL may carry a token (a share link, a login link): never sent on as a Referer.
  "referrer-policy": "no-referrer",
};

/** {@link PAGE_HEADERS} of a page with a form: it may post only to cubby itself. */
const FORM_PAGE_HEADERS = {
  ...PAGE_HEADERS,
  "content-security-policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'",
};

function messagePageBody(title: string, message: string, audience: Audience = "owner"): string {
  const after = audience === "owner" ? '<p><a class="button" href="/">Back to cubby</a></p>' : `<p>${RECIPIENT_WAY_BACK}</p>`;
  return `${pageHead(title)}
${pageBody(`<h1>${escape(title)}</h1><p role="alert">${escape(message)}</p>${after}`)}`;
}

/**
 * Who an error page is for (CONTRACT §15): the owner (the dashboard's, sign-in's and the API's
 * pages: a way back to the dashboard) or a recipient or guest, who followed someone's link and
 * has no dashboard here (content URLs, share links, guest upload links): the way back is the
 * person who sent the link.
 */
export type Audience = "owner" | "recipient";

/** A recipient's way back from an error page. */
export const RECIPIENT_WAY_BACK = "If you expected something here, ask whoever sent you the link for a new one.";

/**
 * What a signed-out recipient of a private or internal file's link sees when this cubby has no
 * identity provider (CONTRACT §15): that the file needs a sign-in, and how a person gets one —
 * never the server's configuration. 401, as the file's own answer would be.
 */
export function recipientSignInPage(): Response {
  const title = "This file needs you to sign in";
  const body = `${pageHead(title)}
${pageBody(`<h1>${escape(title)}</h1>
<p>Only people signed in to this cubby can open it. This cubby signs people in with sign-in links: ask whoever sent you this link for one.</p>
<p>Or ask them for a share link: it opens the file without an account.</p>`)}`;
  return new Response(body, { status: 401, headers: { ...PAGE_HEADERS, "www-authenticate": 'Bearer realm="cubby"' } });
}

/** A page with a title, a message and a link back to the dashboard. */
export function htmlPage(status: number, title: string, message: string, extraHeaders?: Record<string, string>): Response {
  return new Response(messagePageBody(title, message), { status, headers: { ...PAGE_HEADERS, ...extraHeaders } });
}

/** The title of an error page by status: what a person needs to know first. */
function errorTitle(status: number): string {
  if (status === 401) return "Sign-in needed";
  if (status === 403) return "Not allowed";
  if (status === 404) return "Nothing here";
  if (status === 410) return "This link no longer works";
  if (status === 429) return "Too many requests";
  if (status >= 500) return "Something went wrong";
  return "That did not work";
}

/** "this share link has expired" → "This share link has expired." */
export function sentence(message: string): string {
  const s = message.charAt(0).toUpperCase() + message.slice(1);
  return /[.!?]$/.test(s) ? s : `${s}.`;
}

/**
 * What a recipient reads for an error whose message was written for programs (CONTRACT §15): the
 * message as a sentence, with what a person can do about it where the message does not say —
 * a link may be mistyped (404), a limit of wrong passwords ends (429, how long from Retry-After).
 */
export function recipientExplanation(error: AppError): string {
  if (error.code === "resource_exhausted") {
    const wait = error.retryAfterSeconds === undefined ? "a minute" : error.retryAfterSeconds === 1 ? "a second" : `${error.retryAfterSeconds} seconds`;
    return `Too many wrong passwords came from your address. Wait ${wait}, then try again.`;
  }
  if (error.code === "not_found") return `${sentence(error.message)} The link may be mistyped or cut short.`;
  return sentence(error.message);
}

/**
 * An error answered to a browser navigation or a program, by content negotiation (CONTRACT
 * §11): with `text/html` in `Accept`, a page with the same status, a one-line explanation and a
 * way back; otherwise the `google.rpc.Status` JSON of §2. Both carry {@link errorHeaders}. The
 * error was reported (context/report.ts) by the caller.
 * @param accept the request's Accept header, or null
 * @param explanation the page's sentence, when the error's message is meant for programs (by
 *   default: the message as a sentence, for a recipient {@link recipientExplanation})
 * @param audience whom the page's way back is for ({@link Audience})
 * @returns status, headers (with content-length) and the body, for any writer
 */
export function negotiatedError(
  error: AppError,
  accept: string | null,
  method = "GET",
  explanation?: string,
  audience: Audience = "owner",
): { status: number; headers: Record<string, string>; body: string | undefined } {
  const status = httpStatusOf(error.code);
  const html = accept !== null && accept.includes("text/html");
  const said = explanation ?? (audience === "recipient" ? recipientExplanation(error) : sentence(error.message));
  const body = html ? messagePageBody(errorTitle(status), said, audience) : JSON.stringify(toRpcStatus(error));
  const headers: Record<string, string> = {
    ...(html ? PAGE_HEADERS : { "content-type": "application/json" }),
    vary: "Accept",
    ...errorHeaders(error),
    "content-length": String(Buffer.byteLength(body)),
  };
  return { status, headers, body: method === "HEAD" ? undefined : body };
}

/**
 * The HTML rendering of an error, for requests a person makes (sign-in): the status of its code
 * (errors.ts), its message under `title`, and the headers of {@link errorHeaders}. The error was
 * reported (context/report.ts) by the caller.
 */
export function errorPage(title: string, error: AppError): Response {
  return htmlPage(httpStatusOf(error.code), title, error.message, errorHeaders(error));
}

/**
 * A share link's password form (CONTRACT §8): no script; it POSTs `password` to the share's own
 * URL, which answers with an unlock cookie and a redirect back (http/shares-routes.ts).
 * @param message shown above the form ("" for none, e.g. "Wrong password")
 */
export function sharePasswordPage(status: number, message: string): { status: number; headers: Record<string, string>; body: string } {
  const body = `${pageHead("Password needed")}
${pageBody(`<h1>Password needed</h1>${message === "" ? "" : `<p role="alert">${escape(message)}</p>`}
<form method="post"><label>Password <input type="password" name="password" autocomplete="current-password" required autofocus></label> <button type="submit">Open</button></form>`)}`;
  return { status, headers: { ...FORM_PAGE_HEADERS, "content-length": String(Buffer.byteLength(body)) }, body };
}

/** Where a login link's page posts its token (http/auth-routes.ts): a path without the token. */
export const LOGIN_LINK_POST_PATH = "/auth/link";

/**
 * The page a login link opens (CONTRACT §11 as amended): who it signs in, and one "Sign in"
 * button whose form POSTs the token in its body to {@link LOGIN_LINK_POST_PATH}. Opening it
 * changes nothing, so a chat or mail preview of the URL does not use the link up. No script;
 * `Referrer-Policy: no-referrer`, so the token in the page's URL leaves with no request it makes.
 * @param email who the link signs in
 * @param token the link's token (43 base64url characters, already checked)
 */
export function loginLinkPage(email: string, token: string): Response {
  const body = `${pageHead("Sign in")}
${pageBody(`<h1>Sign in to cubby</h1>
<p>This link signs you in as <strong>${escape(email)}</strong>. It works once: the button below uses it.</p>
<form method="post" action="${LOGIN_LINK_POST_PATH}"><input type="hidden" name="token" value="${escape(token)}"><button type="submit" class="primary">Sign in</button></form>
<p class="hint">Not you, or did not ask for it? Close this page; nothing happens until the button is pressed.</p>`)}`;
  return new Response(body, { status: 200, headers: { ...FORM_PAGE_HEADERS, "content-length": String(Buffer.byteLength(body)) } });
}
