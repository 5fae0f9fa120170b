/**
 * The dashboard's static files from web/, embedded in the binary by `bun build --compile`
 * (each `with { type: "file" }` import becomes a path inside the executable).
 */
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

/** A response for an embedded asset, or undefined when the path is not one. */
export function serveStatic(pathname: string): Response | undefined {
  const asset = staticAssets[pathname] ?? dashboardPages[pathname] ?? vendoredAssets[pathname];
  if (asset === undefined) return undefined;
  return new Response(Bun.file(asset.file), {
    headers: { "content-type": asset.type, "cache-control": "no-cache", ...DASHBOARD_HEADERS },
  });
}
