/**
 * The page a person gets for a share link (CONTRACT §11): a browser navigation to `/s/{token}`
 * (`Accept` contains `text/html`, no `download` parameter) is answered with what the file is —
 * name, size, type, who shared it, expiry, downloads left — an inline preview for images, audio,
 * video, PDF and text, and a Download button. Scripts get the bytes as before (§8).
 *
 * How `max_downloads` stays exact: the page itself sends none of the file and counts nothing.
 * Its preview and its Download button fetch the share URL like any client (the preview with
 * `?download=0`, inline; the button with `?download=1`, attachment), so a preview that sends the
 * file from byte 0 counts as a download by the same atomic counter as a script's GET
 * (service/shares.ts `countDownload`), and the content never leaves more than `max_downloads`
 * times. To keep a look from costing a download unasked, a share with a limit shows its preview
 * closed (`<details>`: nothing inside is fetched until the person opens it, which says what it
 * costs); without a limit it is open. With a limit, audio and video also load nothing until
 * played (`preload="none"`: a media element fetches even inside closed `<details>`); playing
 * counts once (its first request starts at byte 0), seeking does not (ranges after byte 0 are
 * not downloads, §8).
 *
 * One script, and only on a share with a download limit: `/assets/share-page.js` keeps "Downloads
 * left" true without a reload (CONTRACT §15), asking the share's status (`?status=1`, which
 * counts nothing) after a download or a preview and when the page is looked at again. The page's
 * CSP allows cubby's own stylesheet, that script and its requests to cubby, and media from the
 * share itself; a share without a limit has nothing to update and no script.
 *
 * Thumbnails (CONTRACT §15) count nothing: the page shows the file's (`?thumbnail=1`) unless
 * its open preview shows the image itself.
 *
 * Link previews (CONTRACT §15): the page carries Open Graph tags (title, size, type), with
 * `og:image` only for a file shared without password or download limit: its thumbnail, or an
 * image without one itself (fetching it is a download like any other, which then costs nothing). Chat and mail preview fetchers, which
 * often do not ask for HTML, are known by their User-Agent ({@link isLinkPreviewer}) and get the
 * page too, so pasting a link into a chat never uses a download.
 */
import type { FileRecord } from "../domain/file.ts";
import type { FolderRow } from "../domain/folder.ts";
import type { ShareListing } from "../service/folders.ts";
import { essenceOf } from "../domain/params.ts";
import type { ShareRow } from "../domain/share.ts";
import { formatSize } from "../domain/size.ts";
import type { ContentReply } from "./content-reply.ts";
import { escapeHtml, pageBody, pageHead } from "./pages.ts";
import { timeHtml } from "./page-time.ts";

/** What the page shows: the share, its file, and the sharer's name (their e-mail only if they chose; undefined if unknown). */
export interface SharePageView {
  share: ShareRow;
  file: FileRecord;
  sharer: string | undefined;
  /** Unix microseconds, for "expires in". */
  nowMicros: number;
  /** The language its dates are written in (page-time.ts pageLocale of the request's Accept-Language). */
  locale: string;
  /** The public origin (HOSTNAME), for the Open Graph URLs, which must be absolute. */
  baseUrl: string;
  /** The file has a thumbnail (`?thumbnail=1`, service/thumbnails.ts), which the page shows and a link preview may. */
  thumbnail: boolean;
}

/**
 * Whether a request comes from a chat's or a mail client's link preview (Slack, Teams and
 * Outlook's MicrosoftPreview, Skype, Discord, WhatsApp and Signal's WhatsApp-named fetcher,
 * Telegram, iMessage's Applebot, Facebook, X, LinkedIn, Mastodon, Matrix's Synapse, …) or a
 * search crawler, by the User-Agent each documents: they get the share page, never the content,
 * so a preview counts no download (CONTRACT §15). A fetcher that hides what it is fetches as any
 * client does.
 */
export function isLinkPreviewer(userAgent: string | null): boolean {
  return userAgent !== null && LINK_PREVIEWERS.test(userAgent);
}

const LINK_PREVIEWERS =
  /Slackbot|Slack-ImgProxy|SkypeUriPreview|MicrosoftPreview|Discordbot|WhatsApp|TelegramBot|facebookexternalhit|Facebot|Twitterbot|LinkedInBot|Mastodon|Pleroma|Akkoma|Bluesky|redditbot|Embedly|Iframely|vkShare|Pinterest|Applebot|Mattermost|Rocket\.Chat|Zulip|Synapse|Viber|Snapchat|Googlebot|bingbot|DuckDuckBot|Yahoo! Slurp|Google-PageRenderer/i;

/** The Open Graph tags of a share page (https://ogp.me): what a pasted link shows. */
function openGraph(tags: { title: string; description: string; url: string; image?: string | undefined }): string {
  const meta = (property: string, content: string) => `<meta property="${property}" content="${escapeHtml(content)}">`;
  return [
    meta("og:type", "website"),
    meta("og:site_name", "cubby"),
    meta("og:title", tags.title),
    meta("og:description", tags.description),
    meta("og:url", tags.url),
    ...(tags.image === undefined ? [] : [meta("og:image", tags.image)]),
  ].join("");
}

/** Media types a link preview may show as `og:image` (the common raster formats every previewer reads). */
const PREVIEW_IMAGES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

/** Text files larger than this are not previewed (the frame would load all of them): 1 MiB. */
const MAX_TEXT_PREVIEW_BYTES = 1024 * 1024;

/** The page's CSP: our stylesheet, the share's own media and frames, no forms elsewhere; with `script`, our downloads-left script and its requests. */
function pageCsp(script: boolean): string {
  const scripts = script ? "; script-src 'self'; connect-src 'self'" : "";
  return `default-src 'none'; style-src 'self'; img-src 'self' data:; media-src 'self'; frame-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'${scripts}`;
}

/** What a page of a share with a download limit adds to its head: the script that keeps "Downloads left" true. */
const DOWNLOADS_LEFT_SCRIPT = '<script src="/assets/share-page.js" defer></script>';

/** The "Downloads left" fact, marked for the script. */
function downloadsLeft(share: ShareRow): string {
  return `<div><dt>Downloads left</dt><dd data-downloads-left>${share.maxDownloads === null ? "No limit" : `${Math.max(0, share.maxDownloads - share.downloadCount)} of ${share.maxDownloads}`}</dd></div>`;
}

/**
 * The share page for a browser (see the module comment).
 * @returns a reply with its own body: 200, `text/html`, never cached (it shows downloads left)
 */
export function sharePage(view: SharePageView, method: string): ContentReply {
  const { share, file } = view;
  const self = `/s/${share.token}`;
  const name = file.name === "" ? "Untitled file" : file.name;
  const facts = [
    `<div><dt>Size</dt><dd>${escapeHtml(formatSize(file.size))}</dd></div>`,
    `<div><dt>Type</dt><dd>${escapeHtml(file.contentType)}</dd></div>`,
    view.sharer === undefined ? "" : `<div><dt>Shared by</dt><dd>${escapeHtml(view.sharer)}</dd></div>`,
    `<div><dt>Expires</dt><dd>${share.expiresAt === null ? "Never" : timeHtml(share.expiresAt, view.locale, view.nowMicros)}</dd></div>`,
    downloadsLeft(share),
  ].join("");
  // og:image only where fetching it needs no password and uses up nothing (CONTRACT §15).
  const free = share.passwordHash === null && share.maxDownloads === null;
  const og = openGraph({
    title: name,
    description: `${formatSize(file.size)} · ${essenceOf(file.contentType)}`,
    url: `${view.baseUrl}${self}`,
    image: !free ? undefined : view.thumbnail ? `${view.baseUrl}${self}?thumbnail=1` : PREVIEW_IMAGES.has(essenceOf(file.contentType)) ? `${view.baseUrl}${self}?download=0` : undefined,
  });
  const limited = share.maxDownloads !== null;
  // The thumbnail counts nothing: shown unless the open preview shows the image itself.
  const picture = view.thumbnail && (limited || !essenceOf(file.contentType).startsWith("image/")) ? `<img class="share-thumb" src="${self}?thumbnail=1" alt="" width="160" height="160">` : "";
  const body = `${pageHead(name, limited ? og + DOWNLOADS_LEFT_SCRIPT : og)}
${pageBody(
  `
<p class="muted">A file shared with you</p>
${picture}<h1 class="file-name">${escapeHtml(name)}</h1>
<dl class="facts">${facts}</dl>
<p><a class="button primary download" href="${self}?download=1" download>Download <span class="muted-on-accent">(${escapeHtml(formatSize(file.size))})</span></a></p>
${previewOf(file, self, share.maxDownloads !== null)}
`,
  "narrow share-page",
)}`;
  return pageReply(body, method, limited);
}

/** What a shared folder's page shows (CONTRACT §12). */
export interface FolderSharePageView {
  share: ShareRow;
  /** The page of the folder shown (the shared one or one below it): FolderService.shareListing. */
  listing: ShareListing;
  sharer: string | undefined;
  nowMicros: number;
  /** The language its dates are written in (page-time.ts pageLocale). */
  locale: string;
  /** The public origin (HOSTNAME), for the Open Graph URLs. */
  baseUrl: string;
  /**
   * A share of several items (CONTRACT §15): the trail's first entry is {@link itemsRoot}, whose
   * listing is the items themselves; "Download all" is everything shared.
   */
  items?: boolean;
  /** The files of the listing that have a thumbnail (`?file={id}&thumbnail=1`, counted never). */
  thumbnails: ReadonlySet<string>;
}

/**
 * The root of a share of several items' page, as the first entry of its trail: named for what
 * it holds ("3 files and 1 folder"), linking to the share's URL itself.
 */
export function itemsRoot(share: ShareRow, items: { files: readonly unknown[]; folders: readonly unknown[] }): FolderRow {
  const count = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"}`;
  const parts = [items.files.length > 0 ? count(items.files.length, "file") : "", items.folders.length > 0 ? count(items.folders.length, "folder") : ""].filter((p) => p !== "");
  return { id: "", ownerId: share.ownerId, parentId: null, name: parts.join(" and "), createdAt: share.createdAt, updatedAt: share.createdAt };
}

/**
 * The page of a shared folder for a browser (CONTRACT §12, §14): the folder's name, who shared
 * it, expiry, downloads left, "Download all" (`?download=zip`, the whole shared folder), the
 * trail from the shared folder down to the one shown (`?folder={id}`), then a page of its
 * sub-folders (links into them) and files, each file with its thumbnail when it has one
 * (`?file={id}&thumbnail=1`, which counts nothing; else its type's label), its size, a Download link
 * (`?file={id}&download=1`) and, for images, audio, video, PDF and text, a Preview
 * (`?file={id}&download=0`) inside a closed `<details>`, so the page itself fetches nothing and
 * counts nothing: each download, of one file or of the ZIP, counts once (service/shares.ts).
 * "More" (`&after=`) opens the next page: a page holds at most SHARE_PAGE_ENTRIES entries, so
 * its cost is bounded whatever the folder holds.
 * @returns a reply with its own body: 200, `text/html`, never cached
 */
export function folderSharePage(view: FolderSharePageView, method: string): ContentReply {
  const { share, listing } = view;
  const self = `/s/${share.token}`;
  const root = listing.trail[0]!;
  const shown = listing.trail[listing.trail.length - 1]!;
  const here = shown === root ? self : `${self}?folder=${shown.id}`;
  const facts = [
    view.sharer === undefined ? "" : `<div><dt>Shared by</dt><dd>${escapeHtml(view.sharer)}</dd></div>`,
    `<div><dt>Expires</dt><dd>${share.expiresAt === null ? "Never" : timeHtml(share.expiresAt, view.locale, view.nowMicros)}</dd></div>`,
    downloadsLeft(share),
  ].join("");
  const costs = share.maxDownloads === null ? "" : ' <span class="muted">(each download, of one file or of all, uses one)</span>';
  const trail =
    listing.trail.length === 1
      ? ""
      : `<nav class="crumbs" aria-label="Folders"><ol>${listing.trail
          .map((f, i) => (i === listing.trail.length - 1 ? `<li aria-current="page">${escapeHtml(f.name)}</li>` : `<li><a href="${i === 0 ? self : `${self}?folder=${f.id}`}">${escapeHtml(f.name)}</a></li>`))
          .join("")}</ol></nav>`;
  const folderRows = listing.folders.map(
    (f) => `<li class="shared-file shared-folder"><div class="shared-file-head"><a class="shared-folder-name" href="${self}?folder=${f.id}">${escapeHtml(f.name)}/</a></div></li>`,
  );
  const fileRows = listing.files.map((file) => {
    const name = file.name === "" ? file.id : file.name;
    const link = `${self}?file=${file.id}`;
    const preview = hasPreview(file) ? `<details class="preview"><summary>Preview</summary>${previewElement(file, `${link}&amp;download=0`, true)}</details>` : "";
    const thumb = view.thumbnails.has(file.id) ? `<img class="thumb" src="${link}&amp;thumbnail=1" alt="" width="48" height="48" loading="lazy">` : `<span class="thumb thumb-icon" aria-hidden="true">${escapeHtml(typeLabel(file))}</span>`;
    return `<li class="shared-file"><div class="shared-file-head">${thumb}<span class="shared-file-name">${escapeHtml(name)}</span> <span class="muted">${escapeHtml(formatSize(file.size))}</span> <a class="button" href="${link}&amp;download=1" download aria-label="Download ${escapeHtml(name)}">Download</a></div>${preview}</li>`;
  });
  const empty = folderRows.length === 0 && fileRows.length === 0 ? '<p class="muted">This folder is empty.</p>' : "";
  const more = listing.next === undefined ? "" : `<p><a class="button" rel="next" href="${here}${here === self ? "?" : "&amp;"}after=${encodeURIComponent(listing.next)}">More</a></p>`;
  const items = view.items === true;
  const og = openGraph({ title: shown.name, description: items && shown === root ? "Shared files" : "A shared folder", url: `${view.baseUrl}${here}` });
  const intro = items ? (shown === root ? "Shared with you" : "A folder shared with you, among other things") : "A folder shared with you";
  const all = items ? "everything shared" : escapeHtml(root.name);
  const limited = share.maxDownloads !== null;
  const body = `${pageHead(shown.name, limited ? og + DOWNLOADS_LEFT_SCRIPT : og)}
${pageBody(
  `
<p class="muted">${intro}</p>
<h1 class="file-name">${escapeHtml(shown.name)}</h1>
${trail}<dl class="facts">${facts}</dl>
<p><a class="button primary download" href="${self}?download=zip" download>Download all <span class="muted-on-accent">(ZIP of ${all})</span></a>${costs}</p>
${empty}<ul class="shared-files">
${[...folderRows, ...fileRows].join("\n")}
</ul>
${more}
`,
  "narrow share-page",
)}`;
  return pageReply(body, method, limited);
}

/** A share page's reply: 200, HTML, never cached (it shows downloads left), the page's CSP (with `script`: {@link pageCsp}); no body for HEAD. */
function pageReply(body: string, method: string, script: boolean): ContentReply {
  return {
    status: 200,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "content-security-policy": pageCsp(script),
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      vary: "Accept",
      "content-length": String(Buffer.byteLength(body)),
    },
    body: method === "HEAD" ? undefined : body,
  };
}

/**
 * The preview element for a file's type, or "" when there is none (other types, large text).
 * @param limited the share has a download limit: the preview starts closed
 */
function previewOf(file: FileRecord, self: string, limited: boolean): string {
  if (!hasPreview(file)) return "";
  const summary = limited ? "Preview (opening it uses one download)" : "Preview";
  return `<details class="preview"${limited ? "" : " open"}><summary>${summary}</summary>${previewElement(file, `${self}?download=0`, limited)}</details>`;
}

/** Whether the page can preview a file of this type and size: images, audio, video, PDF, and text up to 1 MiB. */
function hasPreview(file: FileRecord): boolean {
  const type = essenceOf(file.contentType);
  if (type.startsWith("image/") || type.startsWith("video/") || type.startsWith("audio/") || type === "application/pdf") return true;
  return (type.startsWith("text/") || type === "application/json") && file.size <= MAX_TEXT_PREVIEW_BYTES;
}

/**
 * The element that previews a file {@link hasPreview} accepts, loading `src` (HTML-escaped
 * already); media load nothing until played when `lazyMedia`.
 */
function previewElement(file: FileRecord, src: string, lazyMedia: boolean): string {
  const title = escapeHtml(file.name === "" ? "the file" : file.name);
  const type = essenceOf(file.contentType);
  const preload = lazyMedia ? "none" : "metadata";
  if (type.startsWith("image/")) return `<img class="preview-media" src="${src}" alt="Preview of ${title}" loading="lazy">`;
  if (type.startsWith("video/")) return `<video class="preview-media" src="${src}" controls preload="${preload}" aria-label="Preview of ${title}"></video>`;
  if (type.startsWith("audio/")) return `<audio src="${src}" controls preload="${preload}" aria-label="Preview of ${title}"></audio>`;
  if (type === "application/pdf") return `<iframe class="preview-frame" src="${src}" title="Preview of ${title}" loading="lazy"></iframe>`;
  return `<iframe class="preview-frame text" src="${src}" title="Preview of ${title}" loading="lazy" sandbox></iframe>`;
}

/**
 * A file's type as the short label of the square that stands for a thumbnail it does not have
 * (CONTRACT §15 "a type icon"): the name's extension, else the media type's subtype when short
 * ("pdf"), else its top-level type; at most 4 characters, upper-case. web/app.js has the same rule.
 */
export function typeLabel(file: Pick<FileRecord, "name" | "contentType">): string {
  const extension = /\.([A-Za-z0-9]{1,4})$/.exec(file.name)?.[1];
  const [type = "", subtype = ""] = essenceOf(file.contentType).split("/");
  return (extension ?? (subtype.length > 0 && subtype.length <= 4 ? subtype : type)).slice(0, 4).toUpperCase();
}

