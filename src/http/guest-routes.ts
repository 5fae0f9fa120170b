/**
 * What anyone holding a guest upload link's token sees (CONTRACT §8): `GET /u/{token}`, a page
 * that uploads files through tus without signing in, and `POST /u/{token}?name=…`, a raw upload
 * for scripts that answers with the File JSON. Files land in the link owner's account.
 */
import { Elysia, t } from "elysia";
import { parseDeclaredChecksum } from "../domain/checksum.ts";
import { toFileJson } from "../domain/file.ts";
import { parseName, uploadMediaType } from "../domain/params.ts";
import { AppError, httpStatusOf } from "../errors.ts";
import { report } from "../context/report.ts";
import type { UploadLinkService } from "../service/upload-links.ts";
import { ANYONE, checksums, detail, errors, html, htmlErrors, ok, rawContent, SERVER } from "./describe.ts";
import { queryParam, strictQuery } from "./inputs.ts";
import { PATTERNS } from "./openapi-schemas.ts";
import type { UploadLinkRow } from "../domain/upload-link.ts";
import { formatSize } from "../domain/size.ts";
import { formatTimestamp } from "../domain/time.ts";
import { contextOf, requestContext } from "./request-context.ts";
import { json } from "./respond.ts";
import { DASHBOARD_HEADERS } from "./static.ts";
import { pageBody, pageHead, RECIPIENT_WAY_BACK, sentence } from "../serving/pages.ts";

export interface GuestRoutesDeps {
  links: UploadLinkService;
  baseUrl: () => string;
  maxUploadBytes: number;
}

/** `{token}` of /u/{token}. */
const tokenParams = t.Object({ token: t.String({ description: "The link's token" }) });

/** The /u/{token} routes as an Elysia plugin. */
export function guestRoutes(deps: GuestRoutesDeps) {
  const { links } = deps;
  return new Elysia({ name: "guest-routes", prefix: "/u" })
    .use(requestContext)
    .get(
      "/:token",
      async ({ request, params }) => {
        try {
          const link = await links.active(params.token);
          return page(200, "Upload files", uploadForm(link, links.remainingBytes(link)), true);
        } catch (err) {
          const error = report(err, contextOf(request));
          const status = httpStatusOf(error.code);
          // Sentences for the guest, who followed someone's link (CONTRACT §15), and their way back.
          const [title, why] =
            error.code === "gone"
              ? ["This link no longer takes uploads", sentence(error.message)]
              : error.code === "not_found"
                ? ["This upload link does not work", "It may be mistyped, or its owner deleted it."]
                : error.code === "resource_exhausted"
                  ? ["Try again in a minute", "Too many requests came from your address. Wait a minute, then reload this page."]
                  : ["Try again later", "Something went wrong on the server. Reload this page in a while."];
          return page(status, title, `<p role="alert">${escapeHtml(why)}</p><p>${escapeHtml(RECIPIENT_WAY_BACK)}</p>`, false);
        }
      },
      {
        params: tokenParams,
        parse: "none",
        detail: detail({
          operationId: "guestUploadPage",
          summary: "The guest upload page (HTML)",
          tags: ["upload-links"],
          security: ANYONE,
          responses: { "200": { description: "The page", content: html }, ...htmlErrors(404, 410, 429, ...SERVER) },
        }),
      },
    )
    .post(
      "/:token",
      async ({ request, params, query }) => {
        const length = request.headers.get("content-length");
        if (length !== null && /^\d+$/.test(length) && Number(length) > deps.maxUploadBytes) {
          throw new AppError("payload_too_large", `content is larger than the limit of ${deps.maxUploadBytes} bytes`);
        }
        const file = await links.upload(params.token, {
          name: query.name ?? "",
          contentType: uploadMediaType(request.headers.get("content-type"), query.name ?? ""),
          expectedChecksum: parseDeclaredChecksum(request.headers),
          content: request.body,
        });
        return json(toFileJson(deps.baseUrl(), file));
      },
      {
        params: tokenParams,
        ...strictQuery({ name: queryParam({ maxLength: 255, pattern: PATTERNS.name, description: "File name" }, parseName) }),
        detail: detail({
          operationId: "guestUpload",
          summary: "Upload a file through a guest upload link, without an account",
          tags: ["upload-links"],
          security: ANYONE,
          parameters: checksums,
          requestBody: rawContent,
          responses: { ...ok("File", "The file, now in the link owner's account"), ...errors(400, 404, 410, 413, 429, ...SERVER) },
        }),
      },
    );
}

function uploadForm(link: UploadLinkRow, largestFileBytes: number): string {
  const heading = link.name === "" ? "Upload files" : `Upload files: ${escapeHtml(link.name)}`;
  return `<h1>${heading}</h1>
    <p class="muted">Files you upload here go to the person who shared this link. You do not need an account.</p>
    ${linkLimits(link, largestFileBytes)}
    <p id="error" class="error" role="alert" hidden></p>
    <div id="drop" class="drop">
      <label class="button primary" for="file-input">Choose files</label>
      <input id="file-input" class="visually-hidden" type="file" multiple>
      <span class="hint">or drop them here. Interrupted uploads resume where they stopped.</span>
    </div>
    <ul id="uploads" class="uploads"></ul>`;
}

/**
 * What the link still takes, as a guest reads it: files left (when limited), the largest file
 * (the link's bytes left, or the server's upload limit), and until when. upload.js counts files
 * left down as uploads finish, and shows the expiry in the guest's time zone.
 */
function linkLimits(link: UploadLinkRow, largestFileBytes: number): string {
  const items: string[] = [];
  if (link.maxFiles !== null) {
    const left = Math.max(0, link.maxFiles - link.filesUploaded);
    items.push(`<li>Files left: <strong id="files-left" data-left="${left}">${left}</strong> of ${link.maxFiles}</li>`);
  }
  // data-bytes: what upload.js checks each file against before sending a byte; data-shared:
  // the files share it (the link's max_bytes), so it counts down as they go.
  const shared = link.maxBytes === null ? "" : ' data-shared="true"';
  items.push(`<li>Largest file: <strong id="largest" data-bytes="${largestFileBytes}"${shared}>${formatSize(largestFileBytes)}</strong>${link.maxBytes === null ? "" : ` (of ${formatSize(link.maxBytes)} in all)`}</li>`);
  if (link.expiresAt !== null) {
    const at = formatTimestamp(link.expiresAt);
    items.push(`<li>Open until <time datetime="${at}">${at.slice(0, 16).replace("T", " ")} UTC</time></li>`);
  } else {
    items.push("<li>No expiry date</li>");
  }
  return `<ul class="limits" aria-label="What this link takes">${items.join("")}</ul>`;
}

/**
 * A page of the guest's: the look of every page for people (serving/pages.ts, its header too),
 * the dashboard's CSP; with `withScript`, the uploader's scripts (no inline script: CSP forbids it).
 */
function page(status: number, title: string, body: string, withScript: boolean): Response {
  const scripts = withScript ? `<script defer src="/assets/tus.min.js"></script><script type="module" src="/assets/upload.js"></script>` : "";
  const html = `${pageHead(title, `<meta name="referrer" content="no-referrer">${scripts}`)}
${pageBody(withScript ? body : `<h1>${escapeHtml(title)}</h1>\n    ${body}`)}`;
  // The token is in the URL: no Referer leaves the page, and no cache keeps it.
  return new Response(html, {
    status,
    headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", ...DASHBOARD_HEADERS, "referrer-policy": "no-referrer" },
  });
}

/** Text as HTML character data or a quoted attribute value. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
