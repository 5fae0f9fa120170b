/** Small HTML pages for people (sign-in outcomes), styled like the dashboard, no script. */
import { httpStatusOf, type AppError } from "../errors.ts";
import { errorHeaders } from "./respond.ts";

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A page with a title, a message and a link back to the dashboard. */
export function htmlPage(status: number, title: string, message: string, extraHeaders?: Record<string, string>): Response {
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · cubby</title><link rel="icon" href="/assets/icon.svg" type="image/svg+xml"><link rel="stylesheet" href="/app.css"></head>
<body><main class="narrow"><h1>${escape(title)}</h1><p role="alert">${escape(message)}</p><p><a href="/">Back to cubby</a></p></main></body></html>
`;
  return new Response(body, {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "content-security-policy": "default-src 'none'; style-src 'self'; img-src 'self' data:",
      "x-content-type-options": "nosniff",
      ...extraHeaders,
    },
  });
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
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Password needed · cubby</title><link rel="icon" href="/assets/icon.svg" type="image/svg+xml"><link rel="stylesheet" href="/app.css"></head>
<body><main class="narrow"><h1>Password needed</h1>${message === "" ? "" : `<p role="alert">${escape(message)}</p>`}
<form method="post"><label>Password <input type="password" name="password" autocomplete="current-password" required autofocus></label> <button type="submit">Open</button></form></main></body></html>
`;
  return {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "content-security-policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'",
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      "content-length": String(Buffer.byteLength(body)),
    },
    body,
  };
}
