/**
 * The dashboard's static files from web/, embedded in the binary by `bun build --compile`
 * (each `with { type: "file" }` import becomes a path inside the executable).
 */
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import indexHtmlImport from "../../web/index.html" with { type: "file" };
// @ts-ignore: imported as a file path (type "file"), not as a module; TypeScript cannot tell.
import appJs from "../../web/app.js" with { type: "file" };
import appCss from "../../web/app.css" with { type: "file" };
// @ts-ignore: as app.js.
import uploadJs from "../../web/upload.js" with { type: "file" };
// @ts-ignore: as app.js.
import progressJs from "../../web/progress.js" with { type: "file" };
// @ts-ignore: as app.js.
import tusOptionsJs from "../../web/tus-options.js" with { type: "file" };
// @ts-ignore: as app.js.
import sharePageJs from "../../web/share-page.js" with { type: "file" };
// @ts-ignore: as app.js.
import shareInboxJs from "../../web/share-inbox.js" with { type: "file" };
// @ts-ignore: as app.js.
import sizeJs from "../../web/size.js" with { type: "file" };
// @ts-ignore: as app.js.
import sharexJs from "../../web/sharex.js" with { type: "file" };
// @ts-ignore: as app.js.
import serviceWorkerJs from "../../web/sw.js" with { type: "file" };
// @ts-ignore: as app.js; a web app manifest has no module type declaration.
import manifest from "../../web/manifest.webmanifest" with { type: "file" };
// @ts-ignore: as app.js; an SVG has no module type declaration.
import iconSvg from "../../web/icon.svg" with { type: "file" };
// @ts-ignore: as icon.svg.
import maskableIconSvg from "../../web/icon-maskable.svg" with { type: "file" };
// @ts-ignore: as app.js; tus-js-client's browser build, for the guest upload page.
import tusJs from "../../node_modules/tus-js-client/dist/tus.min.js" with { type: "file" };
// @ts-ignore: as app.js; qrcode-generator's ES module, for share links' QR codes in the dashboard.
import qrcodeJs from "../../node_modules/qrcode-generator/dist/qrcode.mjs" with { type: "file" };
// @ts-ignore: as app.js; pdf.js and its worker, which the dashboard loads to draw an uploaded PDF's first page.
import pdfJs from "../../node_modules/pdfjs-dist/build/pdf.min.mjs" with { type: "file" };
// @ts-ignore: as app.js.
import pdfWorkerJs from "../../node_modules/pdfjs-dist/build/pdf.worker.min.mjs" with { type: "file" };

// bun-types describes every .html import as an HTML bundle; with `type: "file"` it is a path.
const indexHtml = indexHtmlImport as unknown as string;

/** URL path → embedded file and its media type. test/unit/static.test.ts checks every file of web/ is here. */
export const staticAssets: Record<string, { file: string; type: string }> = {
  "/": { file: indexHtml, type: "text/html; charset=utf-8" },
  "/app.js": { file: appJs as unknown as string, type: "text/javascript; charset=utf-8" },
  "/app.css": { file: appCss as unknown as string, type: "text/css; charset=utf-8" },
  "/assets/upload.js": { file: uploadJs as unknown as string, type: "text/javascript; charset=utf-8" },
  "/assets/progress.js": { file: progressJs as unknown as string, type: "text/javascript; charset=utf-8" },
  "/assets/tus-options.js": { file: tusOptionsJs as unknown as string, type: "text/javascript; charset=utf-8" },
  "/assets/share-page.js": { file: sharePageJs as unknown as string, type: "text/javascript; charset=utf-8" },
  "/assets/share-inbox.js": { file: shareInboxJs as unknown as string, type: "text/javascript; charset=utf-8" },
  "/assets/size.js": { file: sizeJs as unknown as string, type: "text/javascript; charset=utf-8" },
  "/assets/sharex.js": { file: sharexJs as unknown as string, type: "text/javascript; charset=utf-8" },
  "/assets/icon.svg": { file: iconSvg as unknown as string, type: "image/svg+xml" },
  "/assets/icon-maskable.svg": { file: maskableIconSvg as unknown as string, type: "image/svg+xml" },
  // The installable dashboard (CONTRACT §15): at the root, so that the worker's scope is the whole origin.
  "/manifest.webmanifest": { file: manifest as unknown as string, type: "application/manifest+json" },
  "/sw.js": { file: serviceWorkerJs as unknown as string, type: "text/javascript; charset=utf-8" },
};

/**
 * The dashboard's sections (issue 40): each address answers the page (index.html), which shows
 * that section; `/` is Files too. Words shorter than a file ID (21 characters, domain/ids.ts), so
 * none can be a content URL (`/{id}`); any other path still answers 404.
 */
export const DASHBOARD_SECTIONS = ["/files", "/shares", "/links", "/webhooks", "/keys", "/admin"] as const;

/** The dashboard's page for `/` and each of {@link DASHBOARD_SECTIONS}. */
export const dashboardPages: Record<string, { file: string; type: string }> = Object.fromEntries(["/", ...DASHBOARD_SECTIONS].map((p) => [p, staticAssets["/"]!]));

/** Embedded files of dependencies (not in web/), served like the dashboard's. */
export const vendoredAssets: Record<string, { file: string; type: string }> = {
  "/assets/tus.min.js": { file: tusJs as unknown as string, type: "text/javascript; charset=utf-8" },
  "/assets/qrcode.mjs": { file: qrcodeJs as unknown as string, type: "text/javascript; charset=utf-8" },
  "/assets/pdf.min.mjs": { file: pdfJs as unknown as string, type: "text/javascript; charset=utf-8" },
  "/assets/pdf.worker.min.mjs": { file: pdfWorkerJs as unknown as string, type: "text/javascript; charset=utf-8" },
};

/**
 * Security headers for the dashboard's own pages. `default-src 'self'` also lets the page
 * register its service worker (`worker-src` falls back to it) and load its manifest
 * (`manifest-src`); the ShareX config's `<a download href="blob:…">` is a navigation, which no
 * fetch directive governs.
 */
export const DASHBOARD_HEADERS = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "same-origin",
  "content-security-policy": "default-src 'self'; img-src 'self' data:; media-src 'self' blob:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
};

const gzipAsync = promisify(gzip);

/** An embedded file as sent: its bytes, their gzip and an entity tag for each (RFC 9110 §8.8.3). */
interface Prepared {
  identity: { body: Uint8Array; etag: string };
  gzip: { body: Uint8Array; etag: string };
}

/** Each embedded file, prepared once per process on its first request. */
const prepared = new Map<string, Promise<Prepared>>();

function prepare(file: string): Promise<Prepared> {
  let ready = prepared.get(file);
  if (ready === undefined) {
    ready = (async () => {
      const body = new Uint8Array(await Bun.file(file).arrayBuffer());
      // node:zlib's callback form compresses off the event loop (pdf.js's worker, 1.4 MB, would
      // hold it for tens of milliseconds with gzipSync).
      const gzip = await gzipAsync(body, { level: 9 });
      const tag = Bun.hash(body).toString(36);
      return { identity: { body, etag: `"${tag}"` }, gzip: { body: new Uint8Array(gzip), etag: `"${tag}-gzip"` } };
    })();
    ready.catch(() => prepared.delete(file));
    prepared.set(file, ready);
  }
  return ready;
}

/**
 * Whether an `Accept-Encoding` header (RFC 9110 §12.5.3) takes gzip: named (or `*`) with a
 * weight other than 0. Absent: identity only (the RFC allows any coding; a client that sends no
 * header, curl without --compressed, gets plain bytes).
 */
export function acceptsGzip(acceptEncoding: string | null): boolean {
  if (acceptEncoding === null) return false;
  let star: boolean | undefined;
  for (const part of acceptEncoding.split(",").slice(0, 16)) {
    const [coding = "", ...params] = part.split(";").map((p) => p.trim().toLowerCase());
    const q = params.find((p) => p.startsWith("q="));
    const takes = q === undefined || Number(q.slice(2)) > 0;
    if (coding === "gzip" || coding === "x-gzip") return takes;
    if (coding === "*") star = takes;
  }
  return star ?? false;
}

/** Whether `If-None-Match` (RFC 9110 §13.1.2, weak comparison) names `etag`, or is `*`. */
function noneMatch(ifNoneMatch: string | null, etag: string): boolean {
  if (ifNoneMatch === null) return false;
  return ifNoneMatch.split(",").some((t) => {
    const tag = t.trim();
    return tag === "*" || tag.replace(/^W\//, "") === etag;
  });
}

/**
 * A response for an embedded asset, or undefined when the path is not one: gzip when the client
 * takes it (the dashboard's first visit is ~80 KB instead of ~300), `Vary: Accept-Encoding`, and
 * a strong ETag, so that a revalidation (`no-cache`: a new binary's files are seen at once)
 * answers 304 with no body.
 */
export async function serveStatic(pathname: string, headers: Headers): Promise<Response | undefined> {
  const asset = staticAssets[pathname] ?? dashboardPages[pathname] ?? vendoredAssets[pathname];
  if (asset === undefined) return undefined;
  const ready = await prepare(asset.file);
  const gzip = acceptsGzip(headers.get("accept-encoding"));
  const sent = gzip ? ready.gzip : ready.identity;
  const common = { "cache-control": "no-cache", etag: sent.etag, vary: "Accept-Encoding", ...DASHBOARD_HEADERS };
  if (noneMatch(headers.get("if-none-match"), sent.etag)) return new Response(null, { status: 304, headers: common });
  return new Response(sent.body, { headers: { "content-type": asset.type, ...(gzip ? { "content-encoding": "gzip" } : {}), ...common } });
}
