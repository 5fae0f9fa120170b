// cubby's dashboard: plain JavaScript against the same REST API scripts use, authenticated by
// the session cookie (same-origin requests only). No framework, no build step, no CDN: the two
// libraries it uses (tus-js-client for resumable uploads, loaded before this module as
// window.tus, and qrcode-generator for share links' QR codes) are embedded in the binary.
// docs/design.md ("The dashboard") says why plain DOM, and how errors are shown beside their cause.
// web/sw.js (registered here) makes it an installable web app that other apps share files into.

import qrcode from "/assets/qrcode.mjs";
import { createSpeedometer, formatSize, formatTime, progressText } from "/assets/progress.js";
import { countShared, takeShared } from "/assets/share-inbox.js";
import { sharexUploader } from "/assets/sharex.js";
import { exactSize, parseSize } from "/assets/size.js";
import { tusOptions } from "/assets/tus-options.js";

const $ = (id) => document.getElementById(id);
const PAGE_SIZE = 50;
/** Expiry choices offered wherever something can expire: [ttl, label]. */
const EXPIRY_CHOICES = [
  ["1h", "in 1 hour"],
  ["1d", "in 1 day"],
  ["7d", "in 7 days"],
  ["30d", "in 30 days"],
];
const TTL_SECONDS = { s: 1, m: 60, h: 3600, d: 86400 };

let nextPageToken = "";
let searchText = "";

/** An API refusal: the google.rpc.Status `message` (e.g. "slug: only A-Z … are allowed") and the HTTP status. */
class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

/** Shows an error that belongs to no field or row (the page could not load) in the alert line at the top. */
function showError(err) {
  const box = $("error");
  box.textContent = err instanceof Error ? err.message : String(err);
  box.hidden = false;
}

let errorIds = 0;

/**
 * Shows `message` beside `field` (after `after`, by default the field itself), marks the field
 * aria-invalid and points its aria-describedby at the message; replaces an earlier one.
 */
function markInvalid(field, message, after = field) {
  clearInvalid(field);
  const note = el("p", { className: "field-error", id: `field-error-${++errorIds}`, textContent: message });
  note.setAttribute("role", "alert");
  note.dataset.field = "";
  after.after(note);
  field.setAttribute("aria-invalid", "true");
  field.setAttribute("aria-describedby", note.id);
}

/** Takes away markInvalid's message and marks. */
function clearInvalid(field) {
  const id = field.getAttribute("aria-describedby");
  if (id) document.getElementById(id)?.remove();
  field.removeAttribute("aria-invalid");
  field.removeAttribute("aria-describedby");
}

/** The text of an error for a person. */
function messageOf(err) {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Runs `work`; on failure shows its message beside `where` (a row's actions, a form's button:
 * what the person just used) and returns undefined, else `work`'s result.
 */
async function attemptAt(where, work) {
  const anchor = where.closest(".inline") ?? where;
  const next = anchor.nextElementSibling;
  // An earlier error of this same action goes; a field's own (markInvalid) stays until that field is tried again.
  if (next?.classList.contains("field-error") && next.dataset.field === undefined) next.remove();
  try {
    return await work();
  } catch (err) {
    const note = el("p", { className: "field-error", textContent: messageOf(err) });
    note.setAttribute("role", "alert");
    anchor.after(note);
    return undefined;
  }
}

/**
 * Runs a form's request; a refusal naming one of `fields` (the API's "max_downloads: …") is
 * shown beside that field, which keeps the value marked invalid; any other beside the submit
 * button. Returns `work`'s result or undefined.
 * @param {Record<string, HTMLElement>} fields API field name → the control holding it
 */
async function submitForm(form, fields, work) {
  for (const field of new Set(Object.values(fields))) clearInvalid(field);
  const submit = form.querySelector("[type=submit]");
  return attemptAt(submit, async () => {
    try {
      return await work();
    } catch (err) {
      const field = err instanceof ApiError ? fields[err.message.split(":")[0]] : undefined;
      if (!field) throw err;
      markInvalid(field, err.message, field.closest("label") ?? field);
      field.focus();
      return undefined;
    }
  });
}

/** fetch() that throws an ApiError carrying the API's message on any non-2xx answer. */
async function api(path, init = {}) {
  const res = await fetch(path, { credentials: "same-origin", ...init });
  const text = await res.text();
  let body = null;
  try {
    body = text === "" ? null : JSON.parse(text);
  } catch {
    // not JSON: a proxy's error page (nginx's 413 or 502), say
  }
  if (!res.ok) throw new ApiError(body?.message ?? `the server answered HTTP ${res.status}`, res.status);
  return body;
}

/** api() with a JSON body. */
function send(method, path, body) {
  return api(path, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
}

/** True when an RFC 3339 time ("" for never) has passed. */
function isPast(rfc3339) {
  return rfc3339 !== "" && Date.parse(rfc3339) <= Date.now();
}

/** A small label saying why a link no longer works ("used up", "expired", "revoked", "full"). */
function badge(text) {
  return el("span", { className: "badge dead", textContent: text });
}

/** A ttl of EXPIRY_CHOICES as an RFC 3339 time from now (tus metadata takes expire_time only). */
function ttlToTime(ttl) {
  const seconds = Number(ttl.slice(0, -1)) * TTL_SECONDS[ttl.slice(-1)];
  return new Date(Date.now() + seconds * 1000).toISOString();
}

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  Object.assign(node, props);
  for (const c of children) node.append(c);
  return node;
}

/** A button with a visible text and, when given, an accessible name naming what it acts on. */
function button(text, label, onClick, className = "") {
  const b = el("button", { type: "button", textContent: text, className });
  if (label) b.setAttribute("aria-label", label);
  b.addEventListener("click", onClick);
  return b;
}

async function copy(text, btn) {
  const was = btn.textContent;
  try {
    await navigator.clipboard.writeText(text);
    btn.textContent = "Copied";
  } catch {
    btn.textContent = "Press Ctrl+C";
  }
  setTimeout(() => (btn.textContent = was), 1500);
}

/**
 * Shows a paged listing (CONTRACT §14: `page_token` → `next_page_token`, "" on the last page) in
 * `list` (a tbody or a ul): the first page at once, then a "Show more" button after `anchor`
 * that appends the next page while there is one. Each page is ordered by `arrange` before it is
 * rendered, so what a page shows first stays first.
 * @param {string} endpoint  the listing's URL, with its query if any
 * @param {string} field  the name of the answer's array (`keys`, `shares`, `upload_links`)
 * @param {(item: any) => Node} render  one item's row or card
 * @param {{ list: HTMLElement, anchor: HTMLElement, arrange?: (items: any[]) => any[], current?: () => boolean }} where
 * @returns {Promise<any[] | undefined>} the first page's items; undefined when `current` says it is stale
 */
async function showPaged(endpoint, field, render, { list, anchor, arrange = (items) => items, current = () => true }) {
  const pageUrl = (token) => `${endpoint}${endpoint.includes("?") ? "&" : "?"}page_token=${encodeURIComponent(token)}`;
  const first = await api(endpoint);
  if (!current()) return undefined;
  list.replaceChildren(...arrange(first[field]).map(render));
  const stale = anchor.nextElementSibling;
  if (stale?.classList.contains("more")) stale.remove();
  let token = first.next_page_token;
  if (token) {
    const more = button("Show more", "", async () => {
      const page = await attemptAt(more, () => api(pageUrl(token)));
      if (page === undefined || !current()) return;
      list.append(...arrange(page[field]).map(render));
      token = page.next_page_token;
      if (!token) more.remove();
    }, "more");
    anchor.after(more);
  }
  return first[field];
}

/** Runs `work` that loads part of the page, showing its error in the alert line; returns its result or undefined. */
async function attempt(work) {
  $("error").hidden = true;
  try {
    return await work();
  } catch (err) {
    showError(err);
    return undefined;
  }
}

/** Adds the EXPIRY_CHOICES to a select.expiry-choice (or an optgroup) after its own first options. */
function fillExpiryChoices(select) {
  for (const [ttl, label] of EXPIRY_CHOICES) select.append(el("option", { value: ttl, textContent: label }));
}

/** `{ttl}` for a chosen EXPIRY_CHOICES value, `{}` for never. */
function expiryBody(choice) {
  return choice ? { ttl: choice } : {};
}

// --- files ---

/** The orders of a file listing (CONTRACT §15 `order_by`, AIP-132), the server's default first: newest first. */
const FILE_ORDERS = ["create_time desc", "create_time", "name", "name desc", "size", "size desc"];
const DEFAULT_ORDER = FILE_ORDERS[0];
/** The direction a column starts in when first chosen: names A to Z, the largest and the newest first. */
const FIRST_ORDER = { name: "name", size: "size desc", create_time: "create_time desc" };
/** The order the file list is in; the address holds it as `order_by` (left out when the default). */
let fileOrder = DEFAULT_ORDER;

/** The order the address names (`?order_by=name`), the default when it names none or one not offered. */
function orderFromUrl() {
  const asked = new URLSearchParams(location.search).get("order_by") ?? "";
  return FILE_ORDERS.includes(asked) ? asked : DEFAULT_ORDER;
}

/**
 * Compares two File objects as the server orders them in `order`, the ID breaking ties (names
 * by UTF-16 code unit, which is the server's code point order outside the astral planes).
 * @returns negative when `a` comes first
 */
function compareFiles(a, b, order) {
  const [field, direction] = order.split(" ");
  const sign = direction === "desc" ? -1 : 1;
  const value = (f) => (field === "size" ? BigInt(f.size) : field === "name" ? f.name : f.created_at);
  const [x, y] = [value(a), value(b)];
  if (x !== y) return (x < y ? -1 : 1) * sign;
  return (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) * sign;
}

/**
 * Shows the order on the list: each sortable column header's `aria-sort` and arrow, and the
 * phone's Sort select.
 */
function renderOrder() {
  const [field, direction] = fileOrder.split(" ");
  for (const th of $("files").tHead.querySelectorAll("th[data-order]")) {
    const current = th.dataset.order === field;
    if (current) th.setAttribute("aria-sort", direction === "desc" ? "descending" : "ascending");
    else th.removeAttribute("aria-sort");
    th.querySelector(".sort-arrow").textContent = current ? (direction === "desc" ? "▼" : "▲") : "";
  }
  $("files-order").value = fileOrder;
}

/**
 * Lists the files in `order` from their first page, and puts it in the address (a history entry,
 * so Back returns to the order before); the folder, search and selection stay.
 */
function sortFiles(order) {
  if (order === fileOrder) return;
  fileOrder = order;
  history.pushState(null, "", folderHref(currentFolder));
  renderOrder();
  attempt(() => loadFiles(false));
}

/** A column header's click: its field in the direction it starts in, or the other way when it is the field already. */
function sortByColumn(field) {
  const [current, direction] = fileOrder.split(" ");
  if (current !== field) return sortFiles(FIRST_ORDER[field]);
  sortFiles(direction === "desc" ? field : `${field} desc`);
}

/** The types that may have a thumbnail: images (the server makes theirs), videos and PDFs (the uploading browser sends theirs). */
const MAY_HAVE_THUMBNAIL = /^(image|video)\/|^application\/pdf\b/;

/**
 * A file row's square (CONTRACT §15): its type as a short label ("PDF", "TXT": the name's
 * extension, else the media type's), replaced by the thumbnail once {@link showThumbnails} learns
 * that the file has one.
 */
function thumbnail(file) {
  const extension = /\.([A-Za-z0-9]{1,4})$/.exec(file.name)?.[1];
  const [type, subtype = ""] = file.content_type.split(";")[0].trim().split("/");
  const label = (extension ?? (subtype.length > 0 && subtype.length <= 4 ? subtype : type)).slice(0, 4).toUpperCase();
  return el("span", { className: "thumb thumb-icon", textContent: label, ariaHidden: "true" });
}

/**
 * Fills in the thumbnails of `files`' rows: one `GET /v1/thumbnails` for the lot (no request per
 * row, and no image that would answer 404), then a lazy-loaded image in each square of a file
 * that has one. `fresh`: load it anew (a poster just sent replaces what the browser has).
 */
async function showThumbnails(files, fresh = false) {
  const ids = files.filter((f) => MAY_HAVE_THUMBNAIL.test(f.content_type)).map((f) => f.id);
  if (ids.length === 0) return;
  const { file_ids: have } = await api(`/v1/thumbnails?file_ids=${ids.join(",")}`);
  for (const id of have) {
    const square = document.querySelector(`tr[data-id="${id}"] .thumb`);
    const src = `/v1/files/${id}/thumbnail${fresh ? `?v=${Date.now()}` : ""}`;
    square?.replaceWith(el("img", { src, alt: "", loading: "lazy", decoding: "async", width: 48, height: 48, className: "thumb" }));
  }
}

/**
 * Fills in the expiry of `files`' rows: one `GET /v1/expiries` for the lot (the File object has
 * no expiry; a GET per row made a page of 50 files 51 requests). A row left unanswered shows "?".
 */
async function showExpiries(files) {
  if (files.length === 0) return;
  let answered = new Map();
  try {
    const { expiries } = await api(`/v1/expiries?file_ids=${files.map((f) => f.id).join(",")}`);
    answered = new Map(expiries.map((e) => [e.file_id, e.expire_time]));
  } finally {
    for (const f of files) {
      const shown = document.querySelector(`tr[data-id="${f.id}"] .expires-at`);
      if (shown) shown.textContent = answered.has(f.id) ? formatTime(answered.get(f.id), { zone: true }) : "?";
    }
  }
}

/** The largest edge of a poster sent for a video or PDF (pixels): the server scales it to 320 anyway. */
const POSTER_EDGE = 640;

/** The largest PDF whose first page the dashboard draws (bytes): pdf.js reads it whole into memory. */
const MAX_PDF_POSTER_BYTES = 64 * 1024 * 1024;

/**
 * A video's or a PDF's thumbnail (CONTRACT §15), made here in the browser and sent as the file's
 * thumbnail, so that the server decodes no video and runs no PDF renderer: a video's frame at
 * one second (or a tenth of a short one), a PDF's first page (pdf.js, loaded only now). Nothing
 * happens for other files, or when this browser cannot read the file; a failure only costs the
 * thumbnail, never the upload. The CSP lets media load from `blob:` for this (static.ts).
 */
async function sendPoster(file, id) {
  const canvas = file.type.startsWith("video/") ? await videoFrame(file) : file.type === "application/pdf" && file.size <= MAX_PDF_POSTER_BYTES ? await pdfFirstPage(file) : undefined;
  if (!canvas) return;
  const poster = await new Promise((resolve) => canvas.toBlob(resolve, "image/jpeg", 0.85));
  if (!poster) return;
  await api(`/v1/files/${id}/thumbnail`, { method: "PUT", headers: { "content-type": "image/jpeg" }, body: poster });
  // A list drawn meanwhile (another upload's) showed the row without it.
  await showThumbnails([{ id, content_type: file.type }], true);
}

/** A video's frame at one second (a tenth of a shorter one), drawn on a canvas. @throws when the browser cannot play it */
async function videoFrame(file) {
  const url = URL.createObjectURL(file);
  try {
    const video = Object.assign(document.createElement("video"), { muted: true, preload: "auto", src: url });
    await mediaEvent(video, "loadeddata");
    video.currentTime = Math.min(1, (video.duration || 0) / 10);
    await mediaEvent(video, "seeked");
    const scale = Math.min(1, POSTER_EDGE / Math.max(video.videoWidth, video.videoHeight, 1));
    const canvas = Object.assign(document.createElement("canvas"), { width: Math.round(video.videoWidth * scale), height: Math.round(video.videoHeight * scale) });
    canvas.getContext("2d").drawImage(video, 0, 0, canvas.width, canvas.height);
    return canvas;
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** A PDF's first page on white, drawn by pdf.js (its worker from /assets too; no eval). @throws when pdf.js cannot read it */
async function pdfFirstPage(file) {
  const pdfjs = await import("/assets/pdf.min.mjs");
  pdfjs.GlobalWorkerOptions.workerSrc = "/assets/pdf.worker.min.mjs";
  const pdf = await pdfjs.getDocument({ data: new Uint8Array(await file.arrayBuffer()), isEvalSupported: false }).promise;
  try {
    const page = await pdf.getPage(1);
    // Drawn at POSTER_EDGE on its longer edge, whatever the page's size in points.
    const natural = page.getViewport({ scale: 1 });
    const viewport = page.getViewport({ scale: POSTER_EDGE / Math.max(natural.width, natural.height) });
    const canvas = Object.assign(document.createElement("canvas"), { width: Math.ceil(viewport.width), height: Math.ceil(viewport.height) });
    const context = canvas.getContext("2d");
    context.fillStyle = "#ffffff";
    context.fillRect(0, 0, canvas.width, canvas.height);
    await page.render({ canvasContext: context, viewport }).promise;
    return canvas;
  } finally {
    await pdf.destroy();
  }
}

/** Resolves at a media element's `name` event; rejects when it cannot load (its `error`). */
function mediaEvent(media, name) {
  return new Promise((resolve, reject) => {
    media.addEventListener(name, resolve, { once: true });
    media.addEventListener("error", () => reject(new Error("this browser cannot read the video")), { once: true });
  });
}

/**
 * A file's row: a table row on wide screens, a card on narrow ones (app.css). A refused change
 * shows the API's message beside its control; see docs/design.md for what the control then holds.
 */
function fileRow(file) {
  const label = file.name || file.id;
  const visibility = el("select");
  for (const v of ["private", "internal", "public"]) visibility.append(el("option", { value: v, textContent: v, selected: v === file.visibility }));
  visibility.setAttribute("aria-label", `Visibility of ${label}`);
  visibility.addEventListener("change", async () => {
    clearInvalid(visibility);
    try {
      replaceRow(file.id, await send("PATCH", `/v1/files/${file.id}`, { visibility: visibility.value }));
    } catch (err) {
      visibility.value = file.visibility; // a choice cannot stay invalid: back to what is saved
      markInvalid(visibility, `Not changed: ${messageOf(err)}`);
    }
  });

  // A refused slug stays in the field, marked invalid with the reason and what is still saved,
  // so it can be corrected; Escape puts the saved slug back.
  const slug = el("input", { value: file.slug, placeholder: "none", maxLength: 128, size: 12 });
  slug.setAttribute("aria-label", `Slug of ${label}`);
  const saveSlug = button("Set", `Set slug of ${label}`, async () => {
    clearInvalid(slug);
    try {
      replaceRow(file.id, await send("PATCH", `/v1/files/${file.id}`, { slug: slug.value.trim() }));
    } catch (err) {
      const saved = file.slug ? `the slug is still "${file.slug}"` : "the file still has no slug";
      markInvalid(slug, `Not saved: ${messageOf(err)}; ${saved} (Esc puts it back).`, slug.parentElement);
    }
  });
  slug.addEventListener("keydown", (e) => {
    if (e.key === "Enter") saveSlug.click();
    if (e.key === "Escape" && slug.getAttribute("aria-invalid")) {
      e.preventDefault();
      slug.value = file.slug;
      clearInvalid(slug);
    }
  });

  // One control shows the expiry and changes it: its first option is the current expiry.
  const expires = el("option", { value: "keep", className: "expires-at", textContent: "…" });
  const choices = el("optgroup", { label: "Change to" }, el("option", { value: "", textContent: "never" }));
  fillExpiryChoices(choices);
  const expiry = el("select", {}, expires, choices);
  expiry.setAttribute("aria-label", `Expiry of ${label}`);
  expiry.addEventListener("change", async () => {
    const choice = expiry.value;
    expiry.value = "keep";
    clearInvalid(expiry);
    try {
      const answer = await send("PATCH", `/v1/files/${file.id}/expiry`, choice ? { ttl: choice } : { expire_time: "" });
      expires.textContent = formatTime(answer.expire_time, { zone: true });
    } catch (err) {
      markInvalid(expiry, `Not changed: ${messageOf(err)}`);
    }
  });
  // The File object has no expiry (it lives beside it): showExpiries asks for a page's rows at once.

  const del = button(
    "Delete",
    `Delete ${label}`,
    async (e) => {
      if (!confirm(`Delete ${label}? This cannot be undone.`)) return;
      const done = await attemptAt(e.currentTarget, () => api(`/v1/files/${file.id}`, { method: "DELETE" }));
      if (done === undefined) return;
      document.querySelector(`tr[data-id="${file.id}"]`)?.remove();
      selected.delete(`file:${file.id}`);
      updateFilesEmpty();
    },
    "danger",
  );
  const copyLink = button("Copy link", `Copy link of ${label}`, (e) => copy(file.url, e.currentTarget));
  // One line, ellipsised when too long (never broken inside a word); the whole name on hover.
  const open = el("a", { href: file.url, textContent: label, target: "_blank", rel: "noopener", title: label, className: "file-name" });
  const share = button("Share", `Share ${label}`, () => openShares(fileSharing(file)));
  const move = button("Move to…", `Move to… ${label}`, (e) => openMoveDialog(file, e.currentTarget));
  // Dragged onto a folder row or a breadcrumb, the file moves there (keyboards have Move to…).
  const nameCell = el(
    "div",
    { className: "name-cell", draggable: true },
    selectBox("file", file.id, label),
    thumbnail(file),
    // On a phone the size goes beside the type (app.css), leaving the choices a line of their own.
    el("div", { className: "name-text" }, open, el("div", { className: "muted" }, file.content_type, el("span", { className: "size-inline", textContent: ` · ${formatSize(file.size)} · ${formatTime(file.created_at)}` }))),
  );
  nameCell.addEventListener("dragstart", (e) => {
    e.dataTransfer.setData(FILE_DRAG_TYPE, JSON.stringify({ id: file.id, name: label }));
    e.dataTransfer.effectAllowed = "move";
  });

  const cell = (className, ...children) => el("td", { className }, ...children);
  const row = el(
    "tr",
    {},
    cell("name full", nameCell),
    cell("size", formatSize(file.size)),
    cell("created", el("time", { dateTime: file.created_at, textContent: formatTime(file.created_at) })),
    cell("visibility", visibility),
    cell("expires", expiry),
    cell("slug full", el("div", { className: "inline" }, slug, saveSlug)),
    cell("actions", el("div", { className: "inline" }, copyLink, share, move, del)),
  );
  row.cells[4].dataset.label = "Expires";
  row.cells[5].dataset.label = "Slug";
  row.dataset.id = file.id;
  row.file = file;
  return row;
}

function replaceRow(id, file) {
  document.querySelector(`tr[data-id="${id}"]`)?.replaceWith(fileRow(file));
  showThumbnails([file]).catch(() => {});
  showExpiries([file]).catch(() => {});
}

/**
 * Shows "Used X of Y" (or "X used · no quota") from GET /v1/usage, with a meter, on Files, and the
 * same line on Upload links, whose unfinished uploads hold a part of it; asked again whenever the
 * list changes. Reserved bytes are unfinished uploads' (CONTRACT §9).
 */
async function loadUsage() {
  const u = await api("/v1/usage");
  const reserved = u.reserved_bytes > 0 ? ` (${formatSize(u.reserved_bytes)} of it reserved by unfinished uploads)` : "";
  const meter = $("usage-meter");
  if (u.quota_bytes === null) {
    $("usage").textContent = $("links-usage").textContent = `${formatSize(u.used_bytes)} used · no quota${reserved}`;
    meter.hidden = true;
    return;
  }
  $("usage").textContent = $("links-usage").textContent = `Used ${formatSize(u.used_bytes)} of ${formatSize(u.quota_bytes)}${reserved}`;
  meter.max = Math.max(u.quota_bytes, 1);
  meter.high = meter.max * 0.9;
  meter.value = Math.min(u.used_bytes, meter.max);
  meter.hidden = false;
}

function updateFilesEmpty() {
  loadUsage().catch(showError);
  const rows = $("files").tBodies[0].rows.length;
  $("files-empty").hidden = rows > 0;
  $("files-empty").textContent = searchText ? `No file name contains "${searchText}".` : currentFolder ? "No files in this folder." : "No files at the top.";
  $("files-count").textContent = rows === 0 ? "" : `${rows} shown${nextPageToken ? ", more below" : ""}`;
  renderSelection();
}

/**
 * Loads the first page (or, with `append`, the next one) of the files in the folder being viewed
 * (at the top: those in no folder); while the search box holds text, of every file whose name
 * contains it, in any folder.
 */
async function loadFiles(append) {
  const query = new URLSearchParams({ page_size: String(PAGE_SIZE) });
  if (searchText) query.set("q", searchText);
  if (fileOrder !== DEFAULT_ORDER) query.set("order_by", fileOrder);
  if (append && nextPageToken) query.set("page_token", nextPageToken);
  const [asked, view, order] = [searchText, viewSerial, fileOrder];
  const from = searchText ? "/v1/files" : `/v1/folders/${currentFolder || TOP_FOLDER}/files`;
  const page = await api(`${from}?${query}`);
  if (asked !== searchText || view !== viewSerial || order !== fileOrder) return; // a newer search, another folder or order
  $("files-caption").textContent = searchText ? "Files in every folder" : currentFolder ? `Files in ${folderPath.at(-1)?.name ?? "this folder"}` : "Files at the top";
  const body = $("files").tBodies[0];
  if (!append) body.replaceChildren();
  for (const f of page.files) body.append(fileRow(f));
  showThumbnails(page.files).catch(() => {});
  showExpiries(page.files).catch(() => {});
  nextPageToken = page.next_page_token;
  $("files-more").hidden = nextPageToken === "";
  updateFilesEmpty();
}

/** Adds a file just uploaded at the head of the list, if it matches the current search (or, without one, is in the folder viewed). */
function showNewFile(file, folderId) {
  if (searchText ? !file.name.toLowerCase().includes(searchText.toLowerCase()) : folderId !== currentFolder) return;
  const body = $("files").tBodies[0];
  const after = [...body.rows].find((row) => compareFiles(file, row.file, fileOrder) < 0);
  // Past the last row shown while more pages follow: it comes with its page, not here.
  if (after === undefined && nextPageToken && body.rows.length > 0) return void updateFilesEmpty();
  body.insertBefore(fileRow(file), after ?? null);
  showThumbnails([file]).catch(() => {});
  showExpiries([file]).catch(() => {});
  updateFilesEmpty();
}

// --- folders (CONTRACT §12) ---

/** The folder being viewed: its ID, "" at the top. The URL holds it as /files?folder={id}. */
let currentFolder = "";
/** The Folder objects from the top down to the one viewed; [] at the top. */
let folderPath = [];
/** Counts navigations: an answer for a folder no longer viewed is dropped. */
let viewSerial = 0;
/** What `GET /v1/folders/{id}/files` takes for the files in no folder. */
const TOP_FOLDER = "root";
/** The drag data type of a file row: JSON `{id, name}`. */
const FILE_DRAG_TYPE = "application/x-cubby-file";
/** Folders the move dialog lists at most (it asks for each one's sub-folders). */
const MAX_PICKER_FOLDERS = 500;
/** Folders deep enough to be a cycle, not a tree: breadcrumbs stop there. */
const MAX_DEPTH = 64;

/**
 * The dashboard's address of a folder ("" the top) listed in `order` (the one shown by default):
 * `/files?folder={id}&order_by=name`; the default order is left out, so `/files` stays `/files`.
 */
function folderHref(id, order = fileOrder) {
  const query = new URLSearchParams();
  if (id) query.set("folder", id);
  if (order !== DEFAULT_ORDER) query.set("order_by", order);
  const text = query.toString();
  return text ? `/files?${text}` : "/files";
}

/** The folder the address bar names, "" at the top. */
function folderFromUrl() {
  return new URLSearchParams(location.search).get("folder") ?? "";
}

/** Every sub-folder of `parentId` ("" the top), page after page. */
async function listFolders(parentId) {
  const folders = [];
  let token = "";
  do {
    const query = new URLSearchParams({ parent_id: parentId, page_size: "100" });
    if (token) query.set("page_token", token);
    const page = await api(`/v1/folders?${query}`);
    folders.push(...page.folders);
    token = page.next_page_token;
  } while (token);
  return folders;
}

/** A folder and its ancestors, top first, asked for one by one (an address opened afresh). */
async function ancestry(id) {
  const chain = [];
  for (let at = id; at && chain.length < MAX_DEPTH; ) {
    const folder = await api(`/v1/folders/${encodeURIComponent(at)}`);
    chain.unshift(folder);
    at = folder.parent_id;
  }
  return chain;
}

/**
 * Shows folder `id` ("" the top): its breadcrumbs, sub-folders and files. `path` (the Folder
 * objects down to it, when the caller knows them) saves asking; `push` adds a history entry;
 * `focus` moves focus to the heading, which names the folder, as a page load would.
 * An unknown folder (deleted, or another user's) shows the top, and says so.
 */
async function openFolder(id, { path, push = false, focus = false } = {}) {
  if (push && folderHref(id) !== location.pathname + location.search) history.pushState(null, "", folderHref(id));
  const serial = ++viewSerial;
  if ($("files-search").value !== "" || searchText !== "") {
    $("files-search").value = "";
    searchText = "";
  }
  let chain = path;
  try {
    chain ??= id ? await ancestry(id) : [];
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 404) || serial !== viewSerial) throw err;
    history.replaceState(null, "", folderHref(""));
    await openFolder("", { focus });
    throw new Error("That folder does not exist (it was deleted, or is not yours): the top is shown.");
  }
  if (serial !== viewSerial) return;
  currentFolder = id;
  folderPath = chain;
  $("files-note").hidden = true;
  renderPlace();
  $("files").tBodies[0].replaceChildren();
  $("folders").tBodies[0].replaceChildren();
  await Promise.all([loadFolders(), loadFiles(false)]);
  if (focus && serial === viewSerial) $("files-title").focus();
}

/** Follows a folder link in the page (a plain click; a middle click or Ctrl+click opens a tab as usual). */
function followFolder(e, id, path) {
  if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  attempt(() => openFolder(id, { path, push: true, focus: true }));
}

/** The heading, breadcrumbs (Home › a › b, each a link and a drop target), title and upload hint of the folder viewed. */
function renderPlace() {
  const here = folderPath.at(-1);
  const crumbs = [{ id: "", name: "Home" }, ...folderPath].map((folder, i, all) => {
    const link = el("a", { href: folderHref(folder.id), textContent: folder.name });
    if (i === all.length - 1) link.setAttribute("aria-current", "page");
    const path = folderPath.slice(0, i);
    link.addEventListener("click", (e) => followFolder(e, folder.id, path));
    acceptFileDrops(link, folder.id, folder.name);
    return el("li", {}, link);
  });
  $("crumbs").querySelector("ol").replaceChildren(...crumbs);
  $("place").hidden = here === undefined;
  if (here) $("share-folder").setAttribute("aria-label", `Share folder ${here.name}`);
  $("files-title").textContent = here?.name ?? "Files";
  document.title = here ? `${here.name} · cubby` : "cubby";
  $("upload-target").textContent = here ? `into ${here.name}` : "to the top";
}

/** Lists the sub-folders of the folder viewed, above its files (none while searching every folder). */
async function loadFolders() {
  const serial = viewSerial;
  const folders = searchText ? [] : await listFolders(currentFolder);
  if (serial !== viewSerial) return;
  folders.sort((a, b) => a.name.localeCompare(b.name));
  $("folders").tBodies[0].replaceChildren(...folders.map(folderRow));
  $("folders").hidden = folders.length === 0;
}

/** A small folder outline before a folder's name; decoration only. */
function folderIcon() {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("class", "folder-icon");
  svg.setAttribute("aria-hidden", "true");
  const shape = document.createElementNS("http://www.w3.org/2000/svg", "path");
  shape.setAttribute("d", "M3 6.5A1.5 1.5 0 0 1 4.5 5h4.6l2 2h8.4A1.5 1.5 0 0 1 21 8.5v9a1.5 1.5 0 0 1-1.5 1.5h-15A1.5 1.5 0 0 1 3 17.5z");
  svg.append(shape);
  return svg;
}

/** "3 files, 1.2 MiB" of a folder's own files (the API counts them directly, not its sub-folders'). */
function folderHolds(folder) {
  const n = folder.file_count;
  return n === 0 ? "no files" : `${n} file${n === 1 ? "" : "s"}, ${formatSize(Number(folder.bytes))}`;
}

/** A sub-folder's row: its name opens it; Rename, Share, Delete; a file dropped on it moves in. */
function folderRow(folder) {
  const path = [...folderPath, folder];
  const open = el("a", { href: folderHref(folder.id), className: "list-name folder-link" }, folderIcon(), folder.name);
  open.addEventListener("click", (e) => followFolder(e, folder.id, path));
  const rename = button("Rename", `Rename folder ${folder.name}`, () =>
    openFolderDialog(`Rename folder ${folder.name}`, "Rename", folder.name, async (name) => {
      const renamed = await send("PATCH", `/v1/folders/${folder.id}`, { name });
      const row = folderRow(renamed);
      $("folders").querySelector(`tr[data-id="${folder.id}"]`)?.replaceWith(row);
      return row.querySelector(".actions button");
    }),
  );
  const share = button("Share", `Share folder ${folder.name}`, () => openShares(folderSharing(folder)));
  const del = button("Delete", `Delete folder ${folder.name}`, (e) => deleteFolder(folder, e.currentTarget), "danger");
  const row = el(
    "tr",
    {},
    el("td", { className: "name full" }, el("div", { className: "name-cell" }, selectBox("folder", folder.id, folder.name), open)),
    el("td", { className: "holds", textContent: folderHolds(folder) }),
    el("td", { className: "actions" }, el("div", { className: "inline" }, rename, share, del)),
  );
  row.cells[1].dataset.label = "Holds";
  row.dataset.id = folder.id;
  acceptFileDrops(row, folder.id, folder.name);
  return row;
}

/** What deleting a folder takes with it: its sub-folders at every depth and the files in them all. */
async function folderTally(folder) {
  const tally = { folders: 0, files: folder.file_count };
  for (let level = [folder.id]; level.length > 0; ) {
    const below = (await Promise.all(level.map(listFolders))).flat();
    tally.folders += below.length;
    for (const f of below) tally.files += f.file_count;
    level = below.map((f) => f.id);
  }
  return tally;
}

/** Asks, saying how many files and sub-folders go with it, then deletes a folder (recursive). */
async function deleteFolder(folder, btn) {
  const tally = await attemptAt(btn, () => folderTally(folder));
  if (!tally) return;
  const files = `${tally.files} file${tally.files === 1 ? "" : "s"}`;
  const folders = `${tally.folders} sub-folder${tally.folders === 1 ? "" : "s"}`;
  const question =
    tally.files === 0 && tally.folders === 0
      ? `Delete the empty folder "${folder.name}"?`
      : tally.folders === 0
        ? `Delete the folder "${folder.name}" and the ${files} in it? The files are deleted too; this cannot be undone.`
        : `Delete the folder "${folder.name}", its ${folders} and the ${files} in them? The files are deleted too; this cannot be undone.`;
  if (!confirm(question)) return;
  if ((await attemptAt(btn, () => api(`/v1/folders/${folder.id}?recursive=true`, { method: "DELETE" }))) === undefined) return;
  $("folders").querySelector(`tr[data-id="${folder.id}"]`)?.remove();
  $("folders").hidden = $("folders").tBodies[0].rows.length === 0;
  note(`Deleted the folder ${folder.name}${tally.files + tally.folders === 0 ? "" : ` with ${files}`}.`);
  $("new-folder").focus();
  loadUsage().catch(showError);
}

/** A line under the list tools saying what a move or delete did (or why it did not), read out politely. */
function note(text, isError = false) {
  const line = $("files-note");
  line.textContent = text;
  line.className = isError ? "field-error" : "muted";
  line.hidden = false;
}

let folderDialogSave;

/**
 * Opens the name dialog (New folder, Rename): `save(name)` makes the request and returns what
 * gets focus once the dialog has closed; a refusal naming the name (a clash, a "/") shows beside
 * the field and the dialog stays open.
 */
function openFolderDialog(title, submitText, value, save) {
  $("folder-dialog-title").textContent = title;
  $("folder-submit").textContent = submitText;
  const input = $("folder-name");
  clearInvalid(input);
  const stale = $("folder-submit").closest(".inline").nextElementSibling;
  if (stale?.classList.contains("field-error")) stale.remove();
  input.value = value;
  folderDialogSave = save;
  $("folder-dialog").showModal();
  input.select();
}

async function submitFolderDialog(e) {
  e.preventDefault();
  const input = $("folder-name");
  const done = await submitForm($("folder-form"), { name: input, parent_id: input }, async () => {
    try {
      return { focus: await folderDialogSave(input.value) };
    } catch (err) {
      // A clash (409) is about the name, though its message does not start "name:".
      if (err instanceof ApiError && err.status === 409) throw new ApiError(`name: ${err.message}`, 409);
      throw err;
    }
  });
  if (!done) return;
  $("folder-dialog").close(); // before focusing: a modal dialog leaves the page behind it inert
  done.focus?.focus();
}

function newFolder() {
  const parent = currentFolder;
  const where = folderPath.at(-1)?.name;
  openFolderDialog(where ? `New folder in ${where}` : "New folder", "Create", "", async (name) => {
    const made = await send("POST", "/v1/folders", parent ? { name, parent_id: parent } : { name });
    if (parent !== currentFolder) return undefined;
    await loadFolders();
    return $("folders").querySelector(`tr[data-id="${made.id}"] a`);
  });
}

/**
 * Moves a file from the folder viewed into folder `to` ("" the top: out of the folder viewed)
 * and updates the page: its row goes (it is no longer here), the folders' counts follow.
 * @returns what should get focus now that the row is gone (the next row's link, or the
 *   heading), or undefined when the row stays (search results span folders)
 * @throws ApiError; a name clash (409) in words a person reads
 */
async function moveFile(file, to, toName) {
  const from = currentFolder;
  try {
    if (to === "") await api(`/v1/folders/${from}/files/${file.id}`, { method: "DELETE" });
    else await api(`/v1/folders/${to}/files/${file.id}`, { method: "PUT" });
  } catch (err) {
    if (err instanceof ApiError && err.status === 409) throw new ApiError(`${toName} already has a file named "${file.name}": nothing moved.`, 409);
    throw err;
  }
  note(`Moved ${file.name || file.id} to ${toName}.`);
  if (from !== currentFolder) return undefined;
  let focus;
  if (!searchText) {
    const row = $("files").querySelector(`tr[data-id="${file.id}"]`);
    const next = row?.nextElementSibling ?? row?.previousElementSibling;
    row?.remove();
    updateFilesEmpty();
    focus = next?.querySelector("a") ?? $("files-title");
  }
  await loadFolders();
  return focus;
}

/**
 * Whether a drag of `types` may drop on folder `folderId`: a file row, and not onto the folder
 * viewed; not onto Home from search results (their folder is unknown, see openMoveDialog).
 */
function takesDrop(folderId, types) {
  return types.includes(FILE_DRAG_TYPE) && folderId !== currentFolder && !(searchText && folderId === "");
}

/** Makes a folder row or breadcrumb take a dragged file row (not one of the folder viewed). */
function acceptFileDrops(target, folderId, name) {
  target.addEventListener("dragover", (e) => {
    if (!takesDrop(folderId, e.dataTransfer.types)) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = "move";
    target.classList.add("drop-target");
  });
  target.addEventListener("dragleave", (e) => {
    if (!target.contains(e.relatedTarget)) target.classList.remove("drop-target");
  });
  target.addEventListener("drop", async (e) => {
    target.classList.remove("drop-target");
    const data = e.dataTransfer.getData(FILE_DRAG_TYPE);
    if (!data || !takesDrop(folderId, e.dataTransfer.types)) return;
    e.preventDefault();
    const file = JSON.parse(data);
    try {
      await moveFile(file, folderId, name);
    } catch (err) {
      note(`Not moved: ${messageOf(err)}`, true);
    }
  });
}

/** The caller's folders as `{id, path}` ("a › b"), in tree order, at most MAX_PICKER_FOLDERS. */
async function folderTree() {
  const children = new Map();
  let count = 0;
  for (let level = [""]; level.length > 0 && count < MAX_PICKER_FOLDERS; ) {
    const parents = level;
    const lists = await Promise.all(parents.map(listFolders));
    level = [];
    lists.forEach((list, i) => {
      list.sort((a, b) => a.name.localeCompare(b.name));
      children.set(parents[i], list);
      count += list.length;
      level.push(...list.map((f) => f.id));
    });
  }
  const out = [];
  const walk = (parentId, prefix) => {
    for (const f of children.get(parentId) ?? []) {
      if (out.length >= MAX_PICKER_FOLDERS) return;
      const path = prefix ? `${prefix} › ${f.name}` : f.name;
      out.push({ id: f.id, name: f.name, path });
      walk(f.id, path);
    }
  };
  walk("", "");
  return out;
}

/** What the open Move to… dialog moves: a File object, or `"selection"` (everything selected). */
let movingFile;
let moveOpener;

/**
 * The Move to… dialog: every folder as a radio button by its path, Home (no folder) first, the
 * folder viewed marked and not choosable. Home is offered where the file's folder is known (a
 * folder's or the top's list, not search results, which span folders). For the selection
 * (`file` is "selection"), Home is offered and the folders selected are not choosable; the
 * folder viewed is "here" only when everything selected is in it.
 */
async function openMoveDialog(file, opener) {
  movingFile = file;
  moveOpener = opener;
  const bulk = file === "selection";
  const entries = bulk ? [...selected.values()] : [];
  const label = bulk ? `${entries.length} selected` : file.name || file.id;
  $("move-title").textContent = `Move ${label}`;
  const stale = $("move-submit").closest(".inline").nextElementSibling;
  if (stale?.classList.contains("field-error")) stale.remove();
  const list = $("move-choices");
  list.replaceChildren(el("li", { className: "muted", textContent: "Loading folders…" }));
  $("move-hint").hidden = bulk || !searchText;
  $("move-submit").disabled = true;
  $("move-dialog").showModal();
  const tree = await attemptAt(list, folderTree);
  if (!tree || movingFile !== file) return;
  const homeKnown = bulk || !searchText;
  const allHere = bulk ? entries.every((e) => e.from === currentFolder) : !searchText;
  const choices = [...(homeKnown ? [{ id: "", name: "Home", path: "Home" }] : []), ...tree];
  list.replaceChildren(
    ...choices.map((c) => {
      const here = allHere && c.id === currentFolder;
      const itself = bulk && selected.has(`folder:${c.id}`);
      const radio = el("input", { type: "radio", name: "move-target", value: c.id, required: true, disabled: here || itself });
      radio.dataset.name = c.name;
      return el("li", {}, el("label", {}, radio, el("span", { textContent: here ? `${c.path} (here)` : itself ? `${c.path} (selected)` : c.path })));
    }),
  );
  if (tree.length === MAX_PICKER_FOLDERS) list.append(el("li", { className: "muted", textContent: `The first ${MAX_PICKER_FOLDERS} folders are listed.` }));
  if (choices.every((c) => allHere && c.id === currentFolder)) list.append(el("li", { className: "muted", textContent: "No other folder yet: make one with New folder." }));
  $("move-submit").disabled = false;
  list.querySelector("input:not(:disabled)")?.focus();
}

async function submitMove(e) {
  e.preventDefault();
  const choice = $("move-form").querySelector("input[name=move-target]:checked");
  if (!choice) return;
  const file = movingFile;
  if (file === "selection") {
    $("move-dialog").close();
    const entries = [...selected.values()];
    const failures = await eachLimited(entries, (entry) => moveEntry(entry, choice.value, choice.dataset.name));
    await reportBulk(entries, failures, `Moved to ${choice.dataset.name}:`, "moved");
    $(selected.size > 0 ? "move-selected" : "files-title").focus();
    return;
  }
  const done = await attemptAt($("move-submit"), async () => ({ focus: await moveFile(file, choice.value, choice.dataset.name) }));
  if (!done) return;
  $("move-dialog").close();
  (done.focus ?? (moveOpener?.isConnected ? moveOpener : $("files-title"))).focus();
}

/**
 * After a tus upload completes: puts the file in the folder that was viewed when it started
 * (`into.id`, "" the top) and shows it if that folder is still viewed. A name clash there (409)
 * leaves it at the top, and the upload's line says so.
 * @returns whether the file is where it was meant to go
 */
async function placeUpload(fileId, into, status) {
  let placed = true;
  if (into.id) {
    try {
      await api(`/v1/folders/${into.id}/files/${fileId}`, { method: "PUT" });
    } catch (err) {
      placed = false;
      const why = err instanceof ApiError && err.status === 409 ? `${into.name} already has a file of that name` : messageOf(err);
      status.textContent = `uploaded, but left at the top: ${why}`;
      status.setAttribute("role", "alert");
    }
  }
  const file = await api(`/v1/files/${fileId}`);
  showNewFile(file, placed ? into.id : "");
  if (placed && $("folders").querySelector(`tr[data-id="${into.id}"]`)) loadFolders().catch(showError);
  return placed;
}

// --- uploads (tus 1.0.0 through tus-js-client) ---

/** The API's message from a failed tus request, or the error's own first line. */
function tusMessage(err) {
  try {
    const parsed = JSON.parse(err?.originalResponse?.getBody() ?? "");
    if (typeof parsed?.message === "string") return `${parsed.message} (HTTP ${err.originalResponse.getStatus()})`;
  } catch {}
  return err?.message ? String(err.message).split("\n")[0] : "upload failed";
}

/** True when a tus error is the network's (no answer, or a proxy's 5xx), not a refusal by cubby. */
function isDropped(err) {
  const status = err?.originalResponse?.getStatus?.() ?? 0;
  return status === 0 || status >= 500;
}

/**
 * Uploads one file through tus with progress, pause/resume and cancel; a large file goes as
 * several partial uploads side by side, joined by the server (tus concatenation; tus-options.js
 * says how many). tus-js-client retries a failed chunk with backoff; when the connection stays
 * down past those retries, the upload resumes by itself from the server's offsets once the
 * browser is back online (or every 10 s).
 */
function upload(file) {
  const bar = el("progress", { max: Math.max(file.size, 1), value: 0 });
  bar.setAttribute("aria-label", `Uploading ${file.name}`);
  const status = el("span", { className: "muted upload-status", textContent: "starting…" });
  const item = el("li", {}, el("span", { className: "upload-name", textContent: file.name }), bar, status);
  const speed = createSpeedometer();
  item.dataset.state = "uploading";
  let paused = false;
  let waiting;
  // Where the file goes: the folder viewed when the upload starts (tus has no folder: put there once complete).
  const into = { id: currentFolder, name: folderPath.at(-1)?.name ?? "" };
  const metadata = { filename: file.name, filetype: file.type || "application/octet-stream", visibility: $("upload-visibility").value };
  if ($("upload-expiry").value) metadata.expire_time = ttlToTime($("upload-expiry").value);

  const resumeLater = () => {
    if (waiting) return;
    const again = () => {
      window.removeEventListener("online", again);
      clearTimeout(waiting);
      waiting = undefined;
      if (paused || item.dataset.state !== "waiting") return;
      item.dataset.state = "uploading";
      status.textContent = "resuming…";
      speed.reset();
      begin().catch(failedToStart);
    };
    window.addEventListener("online", again);
    waiting = setTimeout(again, 10_000);
  };

  const options = {
    endpoint: "/v1/uploads",
    ...tusOptions(file.size),
    metadata,
    removeFingerprintOnSuccess: true,
    onProgress(sent, total) {
      bar.max = Math.max(total, 1);
      bar.value = sent;
      status.textContent = progressText(sent, total, speed.update(sent, total));
    },
    onSuccess(payload) {
      bar.value = bar.max;
      item.dataset.state = "done";
      status.textContent = "uploaded";
      pauseButton.remove();
      cancelButton.remove();
      const id = payload?.lastResponse?.getHeader("Cubby-File-Id");
      if (!id) return void setTimeout(() => item.remove(), 3000);
      // The poster goes first, so that the row placeUpload shows has it.
      sendPoster(file, id)
        .catch((err) => console.info(`${file.name}: no thumbnail sent (${messageOf(err)})`))
        .then(() => placeUpload(id, into, status))
        .then((placed) => placed && setTimeout(() => item.remove(), 3000))
        .catch((err) => (status.textContent = `uploaded; the list could not show it: ${messageOf(err)}`));
    },
    onError(err) {
      if (isDropped(err)) {
        // One part's failure ends the upload; stop the other parts too, to resume them together.
        tus.abort().catch(() => {});
        item.dataset.state = "waiting";
        status.textContent = "connection lost: resumes when it is back";
        resumeLater();
        return;
      }
      item.dataset.state = "failed";
      status.textContent = `failed: ${tusMessage(err)}`;
      status.setAttribute("role", "alert");
      pauseButton.remove();
    },
  };
  let tus;
  /**
   * Starts the upload, or resumes it from the server's offsets (the upload URLs tus-js-client
   * keeps per file in localStorage): a new tus.Upload each time, because tus-js-client 4.3 leaves
   * a parallel upload aborted once abort() was called, and it would then swallow the next error.
   */
  const begin = async () => {
    tus = new window.tus.Upload(file, options);
    const previous = await tus.findPreviousUploads();
    if (previous.length > 0) tus.resumeFromPreviousUpload(previous[0]);
    tus.start();
  };
  const failedToStart = (err) => {
    item.dataset.state = "failed";
    status.textContent = `failed: ${messageOf(err)}`;
  };

  const pauseButton = button("Pause", `Pause ${file.name}`, async () => {
    if (!paused) {
      paused = true;
      await tus.abort();
      item.dataset.state = "paused";
      pauseButton.textContent = "Resume";
      pauseButton.setAttribute("aria-label", `Resume ${file.name}`);
      status.textContent = `paused at ${formatSize(bar.value)}`;
    } else {
      paused = false;
      item.dataset.state = "uploading";
      pauseButton.textContent = "Pause";
      pauseButton.setAttribute("aria-label", `Pause ${file.name}`);
      status.textContent = "resuming…";
      speed.reset();
      begin().catch(failedToStart);
    }
  });
  const cancelButton = button("Cancel", `Cancel ${file.name}`, async () => {
    paused = true;
    clearTimeout(waiting);
    await tus.abort(true).catch(() => {}); // true: also DELETE the upload (tus termination)
    item.remove();
  });
  item.append(el("span", { className: "inline" }, pauseButton, cancelButton));
  $("uploads").append(item);

  begin().catch(failedToStart);
}

function uploadAll(files) {
  for (const f of files) upload(f);
}

// --- share links (of a file, CONTRACT §8, or of a folder, §12: one dialog for both) ---

/**
 * What the share dialog is about: `what` ("file" or "folder"), its `name` for people, the
 * endpoint that lists and creates its links (`GET`/`POST {endpoint}`; revoking is
 * `DELETE /v1/shares/{id}` for both), and the dialog's words for it.
 * A selection of several files and folders (CONTRACT §15 `POST /v1/shares` with `items`) has
 * its `items` and lists only the links made in this dialog (`made`).
 * @typedef {{ what: "file" | "folder" | "selection", name: string, endpoint: string, about: string, items?: object[], made?: object[] }} Sharing
 */

/** @returns {Sharing} the share dialog's subject for a File object */
function fileSharing(file) {
  return {
    what: "file",
    name: file.name || file.id,
    endpoint: `/v1/files/${encodeURIComponent(file.id)}/shares`,
    about: "Anyone with a share link can download the file, whatever its visibility, until the link expires, runs out of downloads or is revoked.",
  };
}

/** @returns {Sharing} the share dialog's subject for a Folder object: its files and its sub-folders' */
function folderSharing(folder) {
  return {
    what: "folder",
    name: folder.name,
    endpoint: `/v1/folders/${encodeURIComponent(folder.id)}/shares`,
    about:
      "Anyone with a share link sees the files in this folder and its sub-folders, as they are when the link is opened, and can download each one or all as one ZIP, until the link expires, runs out of downloads (each file or ZIP downloaded uses one) or is revoked.",
  };
}

// --- a selection of files and folders, shared by one link (CONTRACT §15) ---

/**
 * What is selected, across folders: `file:{id}` or `folder:{id}` → the share item, its name, its
 * kind and ID, and the folder it was selected in (`from`: "" the top, null for a search result,
 * whose folder is not known). Kept while the person moves between folders and sections.
 * @type {Map<string, { item: object, name: string, kind: "file" | "folder", id: string, from: string | null }>}
 */
const selected = new Map();

/** Requests a bulk action has in flight at once: a small number, so a selection of 500 is no flood. */
const BULK_CONCURRENCY = 4;

/** A row's checkbox (in a label as tall as a tap target) that adds its file or folder to the selection, or takes it out. */
function selectBox(kind, id, label) {
  const key = `${kind}:${id}`;
  const box = el("input", { type: "checkbox", checked: selected.has(key), className: "select-box" });
  box.dataset.key = key;
  box.setAttribute("aria-label", `Select ${kind === "folder" ? "folder " : ""}${label}`);
  box.addEventListener("change", () => {
    if (box.checked) selected.set(key, { item: kind === "file" ? { file_id: id } : { folder_id: id }, name: label, kind, id, from: searchText ? null : currentFolder });
    else selected.delete(key);
    renderSelection();
  });
  return el("label", { className: "select-target" }, box);
}

/** The file rows' checkboxes of the list shown. */
const fileBoxes = () => [...$("files").tBodies[0].querySelectorAll(".select-box")];

/**
 * Shows the selection bar (the count; Move to…, Share, Delete, Clear selection, each naming how
 * many it acts on) while anything is selected, and Select all shown as checked, mixed or not.
 */
function renderSelection() {
  const n = selected.size;
  const files = [...selected.values()].filter((s) => s.kind === "file").length;
  $("selection-bar").hidden = n === 0;
  $("selection-count").textContent = n === files ? `${n} file${n === 1 ? "" : "s"} selected` : `${n} selected (${files} file${files === 1 ? "" : "s"}, ${n - files} folder${n - files === 1 ? "" : "s"})`;
  for (const [id, verb] of [["move-selected", "Move"], ["share-selected", "Share"], ["delete-selected", "Delete"]]) $(id).setAttribute("aria-label", `${verb} ${n} selected`);
  const boxes = fileBoxes();
  const ticked = boxes.filter((b) => selected.has(b.dataset.key)).length;
  $("select-all").checked = boxes.length > 0 && ticked === boxes.length;
  $("select-all").indeterminate = ticked > 0 && ticked < boxes.length;
  $("select-all").disabled = boxes.length === 0;
}

/** Select all shown: every file row of the list (the pages loaded) into the selection, or all of them out. */
function selectAllShown() {
  const on = $("select-all").checked;
  for (const box of fileBoxes()) {
    if (box.checked !== on) {
      box.checked = on;
      box.dispatchEvent(new Event("change"));
    }
  }
  renderSelection();
}

function clearSelection() {
  selected.clear();
  for (const box of document.querySelectorAll(".select-box")) box.checked = false;
  renderSelection();
  $("files-search").focus();
}

/**
 * Runs `work` on every item, at most {@link BULK_CONCURRENCY} at a time.
 * @returns {Promise<{ item: any, err: unknown }[]>} the items whose work threw, in the order given
 */
async function eachLimited(items, work) {
  const failed = new Map();
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++];
      try {
        await work(item);
      } catch (err) {
        failed.set(item, err);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(BULK_CONCURRENCY, items.length) }, worker));
  return items.filter((item) => failed.has(item)).map((item) => ({ item, err: failed.get(item) }));
}

/**
 * Says what a bulk action did under the list tools: "Deleted 10 items." or, when some failed,
 * how many and each one's name with the API's reason. Those done leave the selection; the
 * failed stay selected, to try again. Then the folder viewed is listed anew.
 */
async function reportBulk(entries, failures, done, verb) {
  const failedKeys = new Set(failures.map((f) => `${f.item.kind}:${f.item.id}`));
  for (const e of entries) if (!failedKeys.has(`${e.kind}:${e.id}`)) selected.delete(`${e.kind}:${e.id}`);
  const ok = entries.length - failures.length;
  const what = (n) => `${n} item${n === 1 ? "" : "s"}`;
  if (failures.length === 0) note(`${done} ${what(ok)}.`);
  else note(`${done} ${ok} of ${what(entries.length)}. Not ${verb}: ${failures.map((f) => `${f.item.name} (${messageOf(f.err)})`).join("; ")}.`, true);
  await Promise.all([loadFolders(), loadFiles(false)]);
  renderSelection();
  loadUsage().catch(showError);
}

/** Deletes everything selected after one question (folders with everything in them), a few requests at a time. */
async function deleteSelected() {
  const entries = [...selected.values()];
  const files = entries.filter((e) => e.kind === "file").length;
  const folders = entries.length - files;
  const parts = [files ? `${files} file${files === 1 ? "" : "s"}` : "", folders ? `${folders} folder${folders === 1 ? "" : "s"} with everything in ${folders === 1 ? "it" : "them"}` : ""].filter(Boolean);
  if (!confirm(`Delete ${parts.join(" and ")}? This cannot be undone.`)) return;
  const failures = await eachLimited(entries, (e) => api(e.kind === "file" ? `/v1/files/${e.id}` : `/v1/folders/${e.id}?recursive=true`, { method: "DELETE" }));
  await reportBulk(entries, failures, "Deleted", "deleted");
  $(selected.size > 0 ? "delete-selected" : "files-title").focus();
}

/**
 * Moves one selected file or folder into folder `to` ("" the top). A file to the top needs the
 * folder it is in (`DELETE /v1/folders/{from}/files/{id}`): one found by search has none known.
 * @throws ApiError (a name clash in words), or an Error for a file whose folder is not known
 */
async function moveEntry(entry, to, toName) {
  try {
    if (entry.kind === "folder") await send("PATCH", `/v1/folders/${entry.id}`, { parent_id: to });
    else if (to !== "") await api(`/v1/folders/${to}/files/${entry.id}`, { method: "PUT" });
    else if (entry.from === null) throw new Error("found by search, its folder is not known: take it out from its folder");
    else if (entry.from !== "") await api(`/v1/folders/${entry.from}/files/${entry.id}`, { method: "DELETE" });
  } catch (err) {
    if (err instanceof ApiError && err.status === 409) throw new ApiError(`${toName} already has one of that name`, 409);
    throw err;
  }
  entry.from = to;
}

/** @returns {Sharing} the share dialog's subject for what is selected: one link for all of it */
function selectionSharing() {
  const names = [...selected.values()].map((s) => s.name);
  return {
    what: "selection",
    name: names.length <= 3 ? names.join(", ") : `${names.slice(0, 3).join(", ")} and ${names.length - 3} more`,
    endpoint: "/v1/shares",
    items: [...selected.values()].map((s) => s.item),
    made: [],
    about:
      "One link for everything selected: anyone with it sees these files and folders (and what the folders hold, as it is when the link is opened), and can download each one or all as one ZIP, until the link expires, runs out of downloads (each file or ZIP downloaded uses one) or is revoked.",
  };
}

/** The subject of the open share dialog; an answer for an earlier one is dropped. */
let sharing;

/** Opens the share dialog of a file or a folder: its links (working ones first), and a form for a new one. */
async function openShares(subject) {
  sharing = subject;
  $("share-title").textContent = subject.what === "selection" ? `Share ${subject.items.length} selected: ${subject.name}` : `Share links of ${subject.what === "folder" ? "folder " : ""}${subject.name}`;
  $("share-about").textContent = subject.about;
  $("shares-empty").textContent = subject.what === "selection" ? "No link made for this selection yet." : `No share links for this ${subject.what}.`;
  $("shares").replaceChildren();
  $("shares-empty").hidden = true;
  const stale = $("share-form").nextElementSibling;
  if (stale?.classList.contains("field-error")) stale.remove();
  for (const field of [$("share-expiry"), $("share-max"), $("share-password")]) clearInvalid(field);
  $("share-form").reset();
  $("share-dialog").showModal();
  await attemptAt($("shares"), loadShares);
}

async function loadShares() {
  const subject = sharing;
  if (subject.made !== undefined) {
    // A selection's dialog shows the links made in it, newest first.
    $("shares").replaceChildren(...subject.made.map(shareCard));
    $("shares-empty").hidden = subject.made.length > 0;
    return;
  }
  // Working links first (within each page): the ones a person may want to pass on.
  const dead = (share) => (shareState(share) === "" ? 0 : 1);
  const arrange = (shares) => shares.map((share, i) => [share, i]).sort(([a, i], [b, j]) => dead(a) - dead(b) || i - j).map(([share]) => share);
  const shares = await showPaged(subject.endpoint, "shares", shareCard, { list: $("shares"), anchor: $("shares"), arrange, current: () => subject === sharing });
  if (shares !== undefined) $("shares-empty").hidden = shares.length > 0;
}

/** A QR code of `text` as a data: URL image (CSP allows data: images, nothing external). */
function qrImage(text) {
  const qr = qrcode(0, "M");
  qr.addData(text);
  qr.make();
  return el("img", { src: qr.createDataURL(4, 2), alt: `QR code of ${text}`, className: "qr" });
}

/**
 * Why a share link no longer opens, or "" while it does: "used up" (max_downloads reached),
 * "expired" (expire_time passed). The API lists such links until they are revoked.
 */
function shareState(share) {
  if (share.max_downloads !== null && share.download_count >= share.max_downloads) return "used up";
  if (isPast(share.expire_time)) return "expired";
  return "";
}

/** A share link's card: its URL, Copy and QR code while it works, a badge when it no longer does, and Revoke. */
function shareCard(share) {
  const state = shareState(share);
  const limit = share.max_downloads === null ? "" : ` of ${share.max_downloads}`;
  const facts = [
    `${share.download_count}${limit} download${share.download_count === 1 && !limit ? "" : "s"}`,
    `${isPast(share.expire_time) ? "expired" : "expires"} ${formatTime(share.expire_time, { zone: true })}`,
    share.has_password ? "password" : "no password",
  ].join(" · ");
  const revoke = button(
    "Revoke",
    "Revoke share link",
    async (e) => {
      if (!(await revokeShare(share, e.currentTarget))) return;
      if (sharing.made !== undefined) sharing.made = sharing.made.filter((s) => s.id !== share.id);
      await attemptAt($("shares"), loadShares);
      // The card is gone: focus goes to the next link's first control, or to the form.
      ($("shares").querySelector("button") ?? $("share-expiry")).focus();
    },
    "danger",
  );
  const qrBox = el("div", { hidden: true });
  let head;
  if (state === "") {
    const url = el("input", { value: share.url, readOnly: true, size: 40, className: "share-url" });
    url.setAttribute("aria-label", "Share link");
    head = el(
      "div",
      { className: "inline" },
      url,
      button("Copy", "Copy share link", (e) => copy(share.url, e.currentTarget)),
      button("QR code", "Show QR code", () => {
        if (qrBox.childElementCount === 0) qrBox.append(qrImage(share.url));
        qrBox.hidden = !qrBox.hidden;
      }),
      revoke,
    );
  } else {
    // A dead link offers nothing to pass on: its URL is shown struck through, with why.
    head = el("div", { className: "inline" }, badge(state), el("span", { className: "share-url", textContent: share.url }), revoke);
  }
  const card = el("li", { className: state === "" ? "" : "dead" }, head, el("div", { className: "muted share-facts", textContent: facts }), qrBox);
  card.dataset.id = share.id;
  if (state !== "") card.dataset.state = state;
  return card;
}

async function createShare(e) {
  e.preventDefault();
  const body = expiryBody($("share-expiry").value);
  if ($("share-max").value) body.max_downloads = Number($("share-max").value);
  if ($("share-password").value) body.password = $("share-password").value;
  if (sharing.items !== undefined) body.items = sharing.items;
  const fields = { ttl: $("share-expiry"), expire_time: $("share-expiry"), max_downloads: $("share-max"), password: $("share-password") };
  const made = await submitForm($("share-form"), fields, () => send("POST", sharing.endpoint, body));
  if (!made) return;
  sharing.made?.unshift(made);
  $("share-form").reset();
  await attemptAt($("shares"), loadShares);
  // The new link's Copy button: what a person does next, and a screen reader hears that it exists.
  $("shares").querySelector(`li[data-id="${made.id}"] button`)?.focus();
}

// --- upload links ---

/** Why an upload link takes no more files, or "" while it does. */
function linkState(link) {
  if (link.delete_time !== "") return "revoked";
  if (isPast(link.expire_time)) return "expired";
  if ((link.max_files !== null && link.files_uploaded >= link.max_files) || (link.max_bytes !== null && link.bytes_uploaded >= link.max_bytes)) return "full";
  return "";
}

/**
 * An upload link's row. A revoked one stays (the API lists it with show_deleted), marked, with
 * Show files only: what arrived through it stays reachable.
 */
function linkRow(link) {
  const label = link.name || link.id;
  const state = linkState(link);
  const limits = [
    link.max_files === null ? `${link.files_uploaded} file${link.files_uploaded === 1 ? "" : "s"}` : `${link.files_uploaded} of ${link.max_files} files`,
    link.max_bytes === null ? formatSize(link.bytes_uploaded) : `${formatSize(link.bytes_uploaded)} of ${formatSize(link.max_bytes)}`,
  ].join(", ");
  const arrivals = el("ul", { className: "arrivals", hidden: true });
  const show = button("Show files", `Show files of upload link ${label}`, async (e) => {
    if (!arrivals.hidden) {
      arrivals.hidden = true;
      return;
    }
    const page = await attemptAt(e.currentTarget, () => api(`/v1/upload-links/${link.id}/files?page_size=100`));
    if (!page) return;
    arrivals.replaceChildren(
      ...(page.files.length === 0
        ? [el("li", { className: "muted", textContent: "Nothing has arrived yet." })]
        : page.files.map((f) => el("li", {}, el("a", { href: f.url, textContent: f.name || f.id, target: "_blank", rel: "noopener" }), ` ${formatSize(f.size)}`))),
    );
    if (page.next_page_token) arrivals.append(el("li", { className: "muted", textContent: "… and more: the newest 100 are shown." }));
    arrivals.hidden = false;
  });
  const actions = [show];
  if (state !== "revoked") {
    actions.unshift(button("Copy link", `Copy link of upload link ${label}`, (e) => copy(link.url, e.currentTarget)));
    actions.push(
      button(
        "Revoke",
        `Revoke upload link ${label}`,
        async (e) => {
          if (!confirm(`Revoke the upload link "${label}"? Files already uploaded stay; unfinished uploads through it end.`)) return;
          // Revoking a link ends its unfinished uploads, and gives back what they reserved.
          if ((await attemptAt(e.currentTarget, () => api(`/v1/upload-links/${link.id}`, { method: "DELETE" }))) !== undefined) await attempt(() => Promise.all([loadLinks(), loadUnfinished(), loadUsage()]));
        },
        "danger",
      ),
    );
  }
  // A revoked link's URL leads nowhere: its name is plain text.
  const name = state === "revoked" ? el("span", { className: "list-name", textContent: label }) : el("a", { href: link.url, textContent: label, target: "_blank", rel: "noopener", className: "list-name" });
  const row = el(
    "tr",
    {},
    el(
      "td",
      { className: "name full" },
      el("div", { className: "inline" }, name, state === "" ? "" : badge(state)),
      state === "revoked" ? el("div", { className: "muted", textContent: `Revoked ${formatTime(link.delete_time)}: it takes no more files; what arrived stays yours.` }) : "",
      arrivals,
    ),
    el("td", { className: "received", textContent: limits }),
    el("td", { className: "expires", textContent: formatTime(link.expire_time, { zone: true }) }),
    el("td", { className: "actions" }, el("div", { className: "inline" }, ...actions)),
  );
  row.cells[1].dataset.label = "Received";
  row.cells[2].dataset.label = "Expires";
  row.dataset.id = link.id;
  if (state !== "") row.dataset.state = state;
  return row;
}

/** Lists the caller's upload links: the working ones first, then those that no longer take files (revoked last). */
async function loadLinks() {
  linkNames = new Map();
  const rank = (l) => ({ "": 0, full: 1, expired: 1, revoked: 2 })[linkState(l)];
  const arrange = (links) => {
    for (const l of links) linkNames.set(l.id, l.name || l.id);
    return links.map((l, i) => [l, i]).sort(([a, i], [b, j]) => rank(a) - rank(b) || i - j).map(([l]) => l);
  };
  const links = await showPaged("/v1/upload-links?show_deleted=true", "upload_links", linkRow, { list: $("links").tBodies[0], anchor: $("links"), arrange });
  $("links-empty").hidden = links.length > 0;
}

async function createLink(e) {
  e.preventDefault();
  const body = { name: $("link-name").value.trim(), visibility: $("link-visibility").value, ...expiryBody($("link-expiry").value) };
  if ($("link-max-files").value) body.max_files = Number($("link-max-files").value);
  if ($("link-max-mib").value) body.max_bytes = Number($("link-max-mib").value) * 1024 * 1024;
  const fields = { name: $("link-name"), ttl: $("link-expiry"), expire_time: $("link-expiry"), max_files: $("link-max-files"), max_bytes: $("link-max-mib"), visibility: $("link-visibility") };
  const made = await submitForm($("link-form"), fields, () => send("POST", "/v1/upload-links", body));
  if (!made) return;
  $("link-form").reset();
  await attempt(loadLinks);
}

// --- unfinished uploads (GET /v1/uploads, CONTRACT §10) ---

/** Upload link names by ID, for saying which link an unfinished upload comes through. */
let linkNames = new Map();

/**
 * The unfinished uploads of a page, one list per file: the parts of a file sent side by side
 * (same name, same link: the guest page and the dashboard name every part) go together.
 */
function uploadsByFile(uploads) {
  const files = new Map();
  for (const u of uploads) {
    const key = u.name === "" ? u.id : `${u.upload_link_id ?? ""}\u0000${u.name}`;
    files.set(key, [...(files.get(key) ?? []), u]);
  }
  return [...files.values()];
}

/** One file's unfinished upload (its parts together): name, progress, where from, and End. */
function unfinishedCard(parts) {
  const [u] = parts;
  const label = u.name || u.id;
  const offset = parts.reduce((sum, p) => sum + p.offset, 0);
  const length = parts.reduce((sum, p) => sum + p.length, 0);
  const percent = length === 0 ? 100 : Math.floor((offset / length) * 100);
  const from = u.upload_link_id === null ? "Your upload" : `Through upload link ${linkNames.get(u.upload_link_id) ?? u.upload_link_id}`;
  const progress = el("progress", { max: Math.max(length, 1), value: offset });
  progress.setAttribute("aria-label", `${label}: ${percent}% received`);
  const end = button(
    "End upload",
    `End upload ${label}`,
    async (e) => {
      if (!confirm(`End the upload "${label}"? The ${formatSize(offset)} received so far are removed.`)) return;
      const ended = await attemptAt(e.currentTarget, () => Promise.all(parts.map((p) => api(`/v1/uploads/${p.id}`, { method: "DELETE" }))));
      if (ended !== undefined) await attempt(() => Promise.all([loadUnfinished(), loadUsage()]));
    },
    "danger",
  );
  const inParts = parts.length > 1 ? ` in ${parts.length} parts` : "";
  const card = el(
    "li",
    {},
    el("strong", { textContent: label }),
    el("div", { className: "inline" }, progress, el("span", { textContent: `${formatSize(offset)} of ${formatSize(length)} (${percent}%)${inParts}` })),
    el("div", { className: "muted", textContent: `${from} · expires ${formatTime(u.expire_time, { zone: true })}` }),
    el("div", { className: "inline share-facts" }, end),
  );
  card.dataset.id = u.id;
  return card;
}

async function loadUnfinished() {
  const page = await api("/v1/uploads?page_size=100");
  const cards = uploadsByFile(page.uploads).map(unfinishedCard);
  if (page.next_page_token) cards.push(el("li", { className: "muted", textContent: "… and more: the newest 100 are shown." }));
  $("unfinished").replaceChildren(...cards);
  $("unfinished-empty").hidden = page.uploads.length > 0;
}

// --- webhooks (CONTRACT §13) ---

/** A webhook's card: where it points, what it receives, its latest deliveries on demand, Delete. */
function hookCard(hook) {
  const deliveries = el("ul", { className: "arrivals", hidden: true });
  const show = button("Recent deliveries", `Recent deliveries of webhook ${hook.url}`, async (e) => {
    if (!deliveries.hidden) {
      deliveries.hidden = true;
      return;
    }
    const log = await attemptAt(e.currentTarget, () => api(`/v1/webhooks/${hook.id}/deliveries?page_size=20`));
    if (!log) return;
    deliveries.replaceChildren(
      ...(log.deliveries.length === 0
        ? [el("li", { className: "muted", textContent: "Nothing delivered yet." })]
        : log.deliveries.map((d) =>
            el("li", { textContent: `${formatTime(d.attempted_at)} · ${d.type} · ${d.error === "" ? `delivered (${d.status})` : d.error}` }),
          )),
    );
    deliveries.hidden = false;
  });
  const remove = button(
    "Delete",
    `Delete webhook ${hook.url}`,
    async (e) => {
      if (!confirm(`Delete the webhook to ${hook.url}? Events not yet delivered to it are dropped.`)) return;
      if ((await attemptAt(e.currentTarget, () => api(`/v1/webhooks/${hook.id}`, { method: "DELETE" }))) === undefined) return;
      if ($("new-hook").dataset.id === hook.id) $("new-hook").hidden = true;
      await attempt(loadHooks);
    },
    "danger",
  );
  const card = el(
    "li",
    {},
    el("strong", { className: "list-name", textContent: hook.url }),
    el("div", { className: "muted", textContent: `${hook.events.join(", ")} · added ${formatTime(hook.created_at)}` }),
    el("div", { className: "inline share-facts" }, show, remove),
    deliveries,
  );
  card.dataset.id = hook.id;
  return card;
}

async function loadHooks() {
  const { webhooks } = await api("/v1/webhooks");
  $("hooks").replaceChildren(...webhooks.map(hookCard));
  $("hooks-empty").hidden = webhooks.length > 0;
}

async function createHook(e) {
  e.preventDefault();
  const events = [...$("hook-events").querySelectorAll("input:checked")].map((c) => c.value);
  const fields = { url: $("hook-url"), events: $("hook-events") };
  const made = await submitForm($("hook-form"), fields, () => send("POST", "/v1/webhooks", { url: $("hook-url").value.trim(), events }));
  if (!made) return;
  $("new-hook-secret").value = made.secret;
  $("new-hook").dataset.id = made.id;
  $("new-hook").hidden = false;
  $("hook-form").reset();
  await attempt(loadHooks);
}

// --- keys ---

function keyRow(key) {
  const label = key.name || key.id;
  const revoke = button(
    "Revoke",
    `Revoke key ${label}`,
    async (e) => {
      if (!confirm(`Revoke the key "${label}"? Programs using it will stop working.`)) return;
      if ((await attemptAt(e.currentTarget, () => api(`/auth/keys/${key.id}`, { method: "DELETE" }))) === undefined) return;
      if ($("new-key").dataset.id === key.id) {
        $("new-key").hidden = true;
        offerSharex(undefined);
      }
      await attempt(loadKeys);
    },
    "danger",
  );
  const row = el(
    "tr",
    {},
    el("td", { className: "name full" }, el("span", { className: "list-name", textContent: key.access_key_id ? `${label} · S3 ${key.access_key_id}` : label })),
    el("td", { textContent: key.scopes.join(" ") }),
    el("td", { textContent: formatTime(key.created_at) }),
    el("td", { textContent: formatTime(key.last_used_at) }),
    el("td", { textContent: formatTime(key.expire_time, { zone: true }) }),
    el("td", { className: "actions" }, el("div", { className: "inline" }, revoke)),
  );
  ["Scopes", "Created", "Last used", "Expires"].forEach((name, i) => (row.cells[i + 1].dataset.label = name));
  return row;
}

async function loadKeys() {
  const keys = await showPaged("/auth/keys", "keys", keyRow, { list: $("keys").tBodies[0], anchor: $("keys") });
  $("keys-empty").hidden = keys.length > 0;
}

/** The key of the ShareX config offered, and its blob: URL (freed when replaced); undefined and "" while none is. */
let sharexKey;
let sharexUrl = "";

/**
 * Offers the ShareX custom uploader (web/sharex.js) of a new API key that can upload
 * (files.write), as a `cubby.sxcu` download made in the page: the key never leaves it but in
 * that file. Its uploads get the visibility chosen beside the link (public by default: ShareX
 * copies the link to be pasted to others). Without `key`, hides the offer.
 */
function offerSharex(key) {
  if (sharexUrl) URL.revokeObjectURL(sharexUrl);
  sharexKey = key;
  sharexUrl = "";
  $("sharex").hidden = key === undefined;
  if (key === undefined) return;
  const uploader = sharexUploader({ origin: location.origin, key, visibility: $("sharex-visibility").value });
  sharexUrl = URL.createObjectURL(new Blob([`${JSON.stringify(uploader, null, 2)}\n`], { type: "application/json" }));
  $("sharex-download").href = sharexUrl;
}

async function createKey(e) {
  e.preventDefault();
  const scopes = [];
  if ($("key-read").checked) scopes.push("files.read");
  if ($("key-write").checked) scopes.push("files.write");
  const fields = { name: $("key-name"), ttl: $("key-expiry"), expire_time: $("key-expiry") };
  // An S3 access key (CONTRACT §16) is shown as the two lines an env file takes.
  const s3 = $("key-kind").value === "s3";
  const minted = await submitForm($("key-form"), fields, () => send("POST", "/auth/keys", { name: $("key-name").value, scopes, ...expiryBody($("key-expiry").value), ...(s3 ? { s3: true } : {}) }));
  if (!minted) return;
  $("new-key-value").value = s3 ? `AWS_ACCESS_KEY_ID=${minted.access_key_id}\nAWS_SECRET_ACCESS_KEY=${minted.secret_access_key}` : minted.key;
  $("new-key-value").rows = s3 ? 2 : 1;
  $("new-key-value").setAttribute("aria-label", s3 ? "New S3 access key" : "New API key");
  $("new-key").dataset.id = minted.id;
  $("new-key").hidden = false;
  offerSharex(!s3 && scopes.includes("files.write") ? minted.key : undefined);
  $("key-form").reset();
  await attempt(loadKeys);
}

// --- sections: one at a time, each at its own address (issue 40) ---

/**
 * The sections by the first segment of their address (src/http/static.ts DASHBOARD_SECTIONS
 * serves each the page); `/` is Files. `load` fills a section each time it is shown, so what it
 * lists is never older than the visit; Files loads the folder its address names, and names the
 * page and focuses its heading itself (renderPlace: the heading is the folder's name).
 * @type {Record<string, { title: string, load: (focus: boolean) => Promise<unknown> }>}
 */
const SECTIONS = {
  files: {
    title: "Files",
    load: (focus) => {
      fileOrder = orderFromUrl();
      renderOrder();
      return openFolder(folderFromUrl(), { focus });
    },
  },
  shares: { title: "Shares", load: () => loadAllShares() },
  // The links first: unfinished uploads name the link they come through.
  links: { title: "Upload links", load: () => loadLinks().then(loadUnfinished) },
  webhooks: { title: "Webhooks", load: () => loadHooks() },
  keys: { title: "API keys", load: () => loadKeys() },
  admin: { title: "Users", load: () => loadUsers() },
};

/** Whether the person signed in may see the Users section (GET /v1/admin/users answered 200). */
let isAdmin = false;

/** The section the address names ("files" for `/`; the server's router also takes `/keys/` for `/keys`). */
function sectionFromUrl() {
  const name = location.pathname.replace(/^\/|\/$/g, "");
  return Object.hasOwn(SECTIONS, name) ? name : "files";
}

/**
 * Addresses of the one-page dashboard (`/?folder={id}`, as the Folder object's `url` still
 * says) become the Files section's (`/files?folder={id}`), in place: bookmarks and links sent
 * before keep working, and Back does not return to the old form.
 */
function redirectOldAddress() {
  const query = new URLSearchParams(location.search);
  if (location.pathname === "/" && query.get("folder")) history.replaceState(null, "", `/files${location.search}${location.hash}`);
}

/**
 * Shows section `name` alone, marks its navigation item current and fills it. `focus` moves
 * focus to its heading, as a page load would (a navigation or Back, not the first load).
 */
async function showSection(name, { focus = false } = {}) {
  for (const section of document.querySelectorAll("#signed-in > section[data-section]")) section.hidden = section.dataset.section !== name;
  for (const link of $("sections").querySelectorAll("a[data-section]")) {
    if (link.dataset.section === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (name !== "files") {
    document.title = `${SECTIONS[name].title} · cubby`;
    if (focus) document.querySelector(`section[data-section="${name}"] h1`).focus();
  }
  await attempt(() => SECTIONS[name].load(focus));
}

/** Follows a navigation item (a plain click; a middle click or Ctrl+click opens a tab as usual). */
function followSection(e) {
  if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  const link = e.currentTarget;
  if (location.pathname + location.search !== link.pathname) history.pushState(null, "", link.pathname);
  showSection(link.dataset.section, { focus: true });
}

// --- all share links (GET /v1/shares, CONTRACT §15) ---

/** What an item of a share is called, by `file:{id}` or `folder:{id}`: one request each, kept while the section shows. */
const itemNames = new Map();

/** The name of a share's item (a folder's with a trailing "/"); a deleted one says so. */
function itemName(item) {
  const key = item.file_id !== undefined ? `file:${item.file_id}` : `folder:${item.folder_id}`;
  if (!itemNames.has(key)) {
    const asked =
      item.file_id !== undefined
        ? api(`/v1/files/${encodeURIComponent(item.file_id)}`).then((f) => f.name || f.id, () => "a deleted file")
        : api(`/v1/folders/${encodeURIComponent(item.folder_id)}`).then((f) => `${f.name}/`, () => "a deleted folder");
    itemNames.set(key, asked);
  }
  return itemNames.get(key);
}

/** Items of a share named in its row; the rest are counted ("and 4 more"). */
const NAMED_ITEMS = 3;

/** "report.pdf, Trip/ and 4 more": what a share holds, filled in once the names are known. */
async function nameItems(share, into) {
  const names = await Promise.all(share.items.slice(0, NAMED_ITEMS).map(itemName));
  const more = share.items.length - names.length;
  into.textContent = more > 0 ? `${names.join(", ")} and ${more} more` : names.length > 1 ? `${names.slice(0, -1).join(", ")} and ${names.at(-1)}` : names[0];
}

/** A share's access log, newest first (time, what, bytes, completed, network), in `list`; hides it when shown. */
async function toggleDownloads(share, list, btn) {
  if (!list.hidden) {
    list.hidden = true;
    btn.setAttribute("aria-expanded", "false");
    return;
  }
  const log = await attemptAt(btn, () => api(`/v1/shares/${share.id}/downloads?page_size=50`));
  if (!log) return;
  list.replaceChildren(
    ...(log.downloads.length === 0
      ? [el("li", { className: "muted", textContent: "No downloads yet." })]
      : log.downloads.map((d) =>
          el("li", { textContent: `${formatTime(d.time)} · ${d.item} · ${formatSize(d.bytes)} · ${d.completed ? "complete" : "stopped before the end"} · from ${d.client_address || "unknown"}` }),
        )),
  );
  if (log.next_page_token) list.append(el("li", { className: "muted", textContent: "… and older: the newest 50 are shown." }));
  list.hidden = false;
  btn.setAttribute("aria-expanded", "true");
}

/**
 * Asks whether to revoke `share`, then `DELETE /v1/shares/{id}` (the file dialog's cards and the
 * Shares section's rows). A refusal shows beside `at`.
 * @returns whether the share was revoked
 */
async function revokeShare(share, at) {
  if (!confirm("Revoke this share link? It stops working at once.")) return false;
  return (await attemptAt(at, () => api(`/v1/shares/${share.id}`, { method: "DELETE" }))) !== undefined;
}

/**
 * A row of the Shares section: what it holds, its URL (struck through once it no longer works),
 * a password marker, when made, until when, downloads of the limit, the last download; Copy
 * while it works, its access log on demand, Edit, Revoke.
 */
function allShareRow(share) {
  const state = shareState(share);
  const holds = el("span", { className: "list-name", textContent: share.items.length === 1 ? "1 item" : `${share.items.length} items` });
  const log = el("ul", { className: "arrivals", hidden: true });
  const logButton = button("Downloads", "", (e) => toggleDownloads(share, log, e.currentTarget));
  logButton.setAttribute("aria-expanded", "false");
  const revoke = button(
    "Revoke",
    "",
    async (e) => {
      if (!(await revokeShare(share, e.currentTarget))) return;
      await attempt(loadAllShares);
      ($("all-shares").querySelector("tbody button") ?? $("all-shares-title")).focus();
    },
    "danger",
  );
  const edit = button("Edit", "", () => toggleShareEdit(share, row, edit));
  edit.setAttribute("aria-expanded", "false");
  const actions = [logButton, edit, revoke];
  if (state === "") actions.unshift(button("Copy", "", (e) => copy(share.url, e.currentTarget)));
  const row = el(
    "tr",
    { className: state === "" ? "" : "dead" },
    el(
      "td",
      { className: "name full" },
      el("div", { className: "inline" }, holds, state === "" ? "" : badge(state), share.has_password ? el("span", { className: "badge", textContent: "password" }) : ""),
      el("div", { className: "share-url muted", textContent: share.url }),
      log,
    ),
    el("td", { textContent: formatTime(share.created_at) }),
    el("td", { textContent: share.expire_time ? formatTime(share.expire_time, { zone: true }) : "never" }),
    el("td", { textContent: share.max_downloads === null ? `${share.download_count}` : `${share.download_count} of ${share.max_downloads}` }),
    el("td", { textContent: share.last_download_time ? formatTime(share.last_download_time) : "never" }),
    el("td", { className: "actions" }, el("div", { className: "inline" }, ...actions)),
  );
  ["Created", "Expires", "Downloads", "Last download"].forEach((name, i) => (row.cells[i + 1].dataset.label = name));
  // The buttons' names say which share by what it holds, once the names are known.
  const label = (which) => actions.forEach((b) => b.setAttribute("aria-label", `${b.textContent} share of ${which}`));
  label(`${share.items.length === 1 ? "1 item" : `${share.items.length} items`} made ${formatTime(share.created_at)}`);
  nameItems(share, holds).then(() => label(holds.textContent), () => {});
  row.dataset.id = share.id;
  if (state !== "") row.dataset.state = state;
  return row;
}

/**
 * The row's edit form, under its name (opened and closed by Edit): a new expiry, download
 * limit (empty: none) and password (or none); each refusal beside its field (PATCH /v1/shares/{id}).
 */
function toggleShareEdit(share, row, edit) {
  const open = row.querySelector("form.share-edit");
  if (open) {
    open.remove();
    edit.setAttribute("aria-expanded", "false");
    return;
  }
  const expiry = el("select", {}, el("option", { value: "keep", textContent: share.expire_time ? `as now (${formatTime(share.expire_time, { zone: true })})` : "as now (never)" }), el("option", { value: "", textContent: "never" }));
  fillExpiryChoices(expiry);
  const max = el("input", { type: "number", min: 1, step: 1, placeholder: "unlimited", value: share.max_downloads ?? "" });
  const password = el("select", {}, el("option", { value: "keep", textContent: share.has_password ? "keep it" : "none" }), el("option", { value: "new", textContent: "set a new one" }));
  if (share.has_password) password.append(el("option", { value: "remove", textContent: "remove it" }));
  const newPassword = el("input", { type: "password", autocomplete: "new-password", hidden: true, size: 14 });
  // Named by aria-label: a label around a select or input would add its value to the name.
  expiry.setAttribute("aria-label", "Expires");
  max.setAttribute("aria-label", "Max downloads");
  password.setAttribute("aria-label", "Password");
  newPassword.setAttribute("aria-label", "New password");
  password.addEventListener("change", () => (newPassword.hidden = password.value !== "new"));
  const save = el("button", { type: "submit", className: "primary", textContent: "Save" });
  const form = el(
    "form",
    { className: "inline share-edit" },
    el("label", {}, "Expires ", expiry),
    el("label", {}, "Max downloads ", max),
    el("label", {}, "Password ", password),
    newPassword,
    save,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body = {};
    if (expiry.value !== "keep") Object.assign(body, expiry.value ? { ttl: expiry.value } : { expire_time: "" });
    const limit = max.value === "" ? null : Number(max.value);
    if (limit !== share.max_downloads) body.max_downloads = limit;
    if (password.value === "remove") body.password = null;
    if (password.value === "new") body.password = newPassword.value;
    const fields = { ttl: expiry, expire_time: expiry, max_downloads: max, password: password.value === "new" ? newPassword : password };
    const changed = await submitForm(form, fields, () => send("PATCH", `/v1/shares/${share.id}`, body));
    if (!changed) return;
    const fresh = allShareRow(changed);
    row.replaceWith(fresh);
    fresh.querySelector("td.actions button").focus();
  });
  row.cells[0].append(form);
  edit.setAttribute("aria-expanded", "true");
  expiry.focus();
}

/** The Shares section: every share link of the caller's, newest first, a page at a time. */
async function loadAllShares() {
  itemNames.clear(); // a file renamed since the last visit shows its new name
  const shares = await showPaged("/v1/shares", "shares", allShareRow, { list: $("all-shares").tBodies[0], anchor: $("all-shares") });
  $("all-shares-empty").hidden = shares.length > 0;
}

// --- users, for administrators (GET and PATCH /v1/admin/users, CONTRACT §15) ---

/** Whether the caller is an administrator: GET /v1/admin/users answers 200 (403 otherwise). /v1/me does not say. */
async function askAdmin() {
  try {
    await api("/v1/admin/users?page_size=1");
    return true;
  } catch {
    return false;
  }
}

/** What a quota field means: bytes, "none", or "default" (empty). @throws ApiError naming quota_bytes when it is none of those */
function quotaSetting(text) {
  const typed = text.trim();
  if (typed === "") return "default";
  if (typed.toLowerCase() === "none") return "none";
  const bytes = parseSize(typed);
  if (bytes === undefined) throw new ApiError(`quota_bytes: "${typed}" is not a size: write it as 5G, 500MiB, 2TB or bytes, none for no quota, or leave it empty for the default`, 400);
  return bytes;
}

/** What a user's quota is and where it comes from, for the line under the field. */
function quotaSource(user) {
  if (user.quota_source === "none") return "no quota, set for them";
  if (user.quota_source === "own") return `${formatSize(user.quota_bytes)}, set for them`;
  return user.quota_bytes === null ? "the default: no quota" : `the default: ${formatSize(user.quota_bytes)}`;
}

/**
 * A user's row: e-mail and display name, used bytes, the quota (a field that takes units; Set
 * or Enter), files, last seen, and Disabled and Administrator check boxes that change at once.
 * A refusal shows beside its control: the quota keeps what was typed, a box goes back.
 */
function userRow(user) {
  let row;
  const replace = (changed) => {
    const fresh = userRow(changed);
    row.replaceWith(fresh);
    return fresh;
  };
  const quota = el("input", { value: user.quota_source === "own" ? exactSize(user.quota_bytes) : user.quota_source === "none" ? "none" : "", placeholder: "default", size: 9, maxLength: 32 });
  quota.setAttribute("aria-label", `Quota of ${user.email}`);
  const setQuota = button("Set", `Set quota of ${user.email}`, async () => {
    clearInvalid(quota);
    try {
      const fresh = replace(await send("PATCH", `/v1/admin/users/${user.id}`, { quota_bytes: quotaSetting(quota.value) }));
      fresh.querySelector("td.quota input").focus();
    } catch (err) {
      markInvalid(quota, `Not changed: ${messageOf(err)}`, quota.parentElement);
    }
  });
  quota.addEventListener("keydown", (e) => {
    if (e.key === "Enter") setQuota.click();
  });
  const flag = (field, text, on) => {
    const box = el("input", { type: "checkbox", checked: on });
    const label = el("label", { className: "check" }, box, ` ${text}`);
    box.setAttribute("aria-label", `${text}: ${user.email}`);
    box.addEventListener("change", async () => {
      clearInvalid(box);
      try {
        const fresh = replace(await send("PATCH", `/v1/admin/users/${user.id}`, { [field]: box.checked }));
        fresh.querySelector(`input[data-field="${field}"]`).focus();
      } catch (err) {
        box.checked = on; // a choice cannot stay invalid: back to what is saved
        markInvalid(box, `Not changed: ${messageOf(err)}`, label);
      }
    });
    box.dataset.field = field;
    return label;
  };
  row = el(
    "tr",
    {},
    el(
      "td",
      { className: "name full" },
      el("div", { className: "inline" }, el("span", { className: "list-name", textContent: user.email }), user.disabled ? badge("disabled") : "", user.admin ? el("span", { className: "badge", textContent: "admin" }) : ""),
      el("div", { className: "muted", textContent: user.display_name }),
    ),
    el("td", { textContent: formatSize(user.used_bytes) }),
    el("td", { className: "quota" }, el("div", { className: "inline" }, quota, setQuota), el("div", { className: "muted", textContent: quotaSource(user) })),
    el("td", { textContent: String(user.files) }),
    el("td", { textContent: formatTime(user.last_seen_time) }),
    el("td", { className: "actions" }, el("div", { className: "inline" }, flag("disabled", "Disabled", user.disabled), flag("admin", "Administrator", user.admin))),
  );
  ["Used", "Quota", "Files", "Last seen"].forEach((name, i) => (row.cells[i + 1].dataset.label = name));
  row.dataset.id = user.id;
  return row;
}

/** The Users section: every user by e-mail, a page at a time; for anyone else, what it is for. */
async function loadUsers() {
  $("admin-refused").hidden = isAdmin;
  $("admin-body").hidden = !isAdmin;
  if (!isAdmin) return;
  await showPaged("/v1/admin/users", "users", userRow, { list: $("users").tBodies[0], anchor: $("users") });
}

// --- start ---

/** Whether a drag carries files from outside the page (a file row dragged onto a folder does not). */
const carriesFiles = (e) => e.dataTransfer?.types.includes("Files") ?? false;

/**
 * Files dropped anywhere on the page upload into the folder viewed while Files is the section
 * shown (the dashed box lights up for the whole drag); on any other section, or signed out, the
 * drop is refused. Either way the browser never opens a dropped file in place of the dashboard.
 */
function wireDropAnywhere() {
  const box = $("drop");
  const onFiles = () => !$("signed-in").hidden && !$("section-files").hidden;
  // dragenter and dragleave fire for every element crossed: the box is lit while any is entered.
  let entered = 0;
  document.addEventListener("dragenter", (e) => {
    if (!carriesFiles(e)) return;
    entered++;
    if (onFiles()) box.classList.add("over");
  });
  document.addEventListener("dragleave", (e) => {
    if (!carriesFiles(e)) return;
    entered = Math.max(0, entered - 1);
    if (entered === 0) box.classList.remove("over");
  });
  document.addEventListener("dragover", (e) => {
    if (!carriesFiles(e)) return; // a file row dragged to a folder: the folder's handlers decide
    e.preventDefault();
    e.dataTransfer.dropEffect = onFiles() ? "copy" : "none";
  });
  document.addEventListener("drop", (e) => {
    if (!carriesFiles(e)) return;
    e.preventDefault();
    entered = 0;
    box.classList.remove("over");
    if (onFiles()) uploadAll([...e.dataTransfer.files]);
  });
}

/** Where the file list's view (`list` or `grid`) is kept (this browser only). */
const FILE_VIEW_KEY = "cubby.file-view";

/**
 * The Grid toggle: the files as tiles of their thumbnails (or type squares), names and sizes,
 * for looking through photos; the per-file controls stay in the list view. The choice is kept
 * in localStorage; a browser that refuses storage keeps it for the visit.
 */
function wireGridView() {
  const toggle = $("grid-view");
  const show = (grid) => {
    $("files").classList.toggle("grid", grid);
    $("section-files").classList.toggle("grid-view", grid);
    toggle.setAttribute("aria-pressed", String(grid));
  };
  try {
    show(localStorage.getItem(FILE_VIEW_KEY) === "grid");
  } catch {
    // storage refused: the list
  }
  toggle.addEventListener("click", () => {
    const grid = toggle.getAttribute("aria-pressed") !== "true";
    show(grid);
    try {
      localStorage.setItem(FILE_VIEW_KEY, grid ? "grid" : "list");
    } catch {
      // storage refused (private mode, full): remembered for this visit only
    }
  });
}

/** Where the visibility and expiry last chosen for uploads are kept (this browser only). */
const UPLOAD_DEFAULTS_KEY = "cubby.upload-defaults";

/**
 * The upload box's visibility and expiry are kept in localStorage when changed and chosen again
 * on the next visit; a kept value no longer offered is ignored.
 */
function rememberUploadDefaults() {
  const selects = { visibility: $("upload-visibility"), expiry: $("upload-expiry") };
  let kept = {};
  try {
    kept = JSON.parse(localStorage.getItem(UPLOAD_DEFAULTS_KEY) ?? "{}") ?? {};
  } catch {
    // unreadable (or storage refused): the page's defaults
  }
  for (const [name, select] of Object.entries(selects)) {
    const value = kept[name];
    if (typeof value === "string" && [...select.options].some((o) => o.value === value)) select.value = value;
    select.addEventListener("change", () => {
      try {
        localStorage.setItem(UPLOAD_DEFAULTS_KEY, JSON.stringify({ visibility: selects.visibility.value, expiry: selects.expiry.value }));
      } catch {
        // storage refused (private mode, full): remembered for this visit only
      }
    });
  }
}


function wire() {
  for (const select of document.querySelectorAll("select.expiry-choice")) fillExpiryChoices(select);
  $("sign-out").addEventListener("click", (e) => attemptAt(e.currentTarget, () => api("/auth/logout", { method: "POST" }).then(() => location.assign("/"))));
  $("file-input").addEventListener("change", (e) => {
    uploadAll([...e.target.files]);
    e.target.value = "";
  });
  wireDropAnywhere();
  rememberUploadDefaults();
  wireGridView();
  let searchTimer;
  $("files-search").addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => {
      searchText = $("files-search").value.trim();
      $("files-note").hidden = true;
      attempt(() => Promise.all([loadFiles(false), loadFolders()]));
    }, 250);
  });
  $("files-more").addEventListener("click", () => attempt(() => loadFiles(true)));
  for (const th of $("files").tHead.querySelectorAll("th[data-order]")) th.querySelector("button").addEventListener("click", () => sortByColumn(th.dataset.order));
  $("files-order").addEventListener("change", (e) => sortFiles(e.target.value));
  $("new-folder").addEventListener("click", newFolder);
  $("share-selected").addEventListener("click", () => openShares(selectionSharing()));
  $("clear-selected").addEventListener("click", clearSelection);
  $("move-selected").addEventListener("click", (e) => openMoveDialog("selection", e.currentTarget));
  $("delete-selected").addEventListener("click", deleteSelected);
  $("select-all").addEventListener("change", selectAllShown);
  $("folder-form").addEventListener("submit", submitFolderDialog);
  $("folder-cancel").addEventListener("click", () => $("folder-dialog").close());
  $("move-form").addEventListener("submit", submitMove);
  $("move-cancel").addEventListener("click", () => $("move-dialog").close());
  window.addEventListener("popstate", () => showSection(sectionFromUrl(), { focus: true }));
  for (const link of $("sections").querySelectorAll("a[data-section]")) link.addEventListener("click", followSection);
  $("share-form").addEventListener("submit", createShare);
  $("share-close").addEventListener("click", () => $("share-dialog").close());
  $("share-folder").addEventListener("click", () => folderPath.length > 0 && openShares(folderSharing(folderPath.at(-1))));
  $("link-form").addEventListener("submit", createLink);
  $("unfinished-refresh").addEventListener("click", () => attempt(() => Promise.all([loadUnfinished(), loadUsage()])));
  $("hook-form").addEventListener("submit", createHook);
  $("new-hook-copy").addEventListener("click", (e) => copy($("new-hook-secret").value, e.currentTarget));
  $("key-form").addEventListener("submit", createKey);
  $("new-key-copy").addEventListener("click", (e) => copy($("new-key-value").value, e.currentTarget));
  $("sharex-visibility").addEventListener("change", () => offerSharex(sharexKey));
}

// --- installed on a phone: the service worker and the share target (CONTRACT §15) ---

/**
 * Registers web/sw.js, which keeps the page's shell for offline starts and receives shares
 * from other apps, where the browser has service workers (https, or localhost). Failing to is
 * no error of the page: it works as before, only not installed.
 */
function registerServiceWorker() {
  if (!("serviceWorker" in navigator)) return;
  navigator.serviceWorker.register("/sw.js").catch((err) => console.info(`cubby works without its service worker here: ${messageOf(err)}`));
}

/**
 * `?shared=1` (web/sw.js received a share) or `?shared=0` (the server did: the share came before
 * the service worker, and its files are lost), taken out of the address at once so that a reload
 * or a bookmark does not carry it; the folder in it stays.
 * @returns {string | null} the parameter's value, null without one
 */
function takeSharedParameter() {
  const shared = new URLSearchParams(location.search).get("shared");
  if (shared !== null) history.replaceState(null, "", location.pathname === "/" && !folderFromUrl() ? "/" : folderHref(folderFromUrl(), orderFromUrl()));
  return shared;
}

/** What a share the server received instead of the service worker means for the person (see takeSharedParameter). */
const SHARE_LOST = "The share reached cubby before this browser had cubby's app ready, so nothing was kept: share it again.";

/**
 * Uploads the files other apps shared into the installed dashboard (web/share-inbox.js), through
 * upload() as if they were picked, into the folder viewed. Run on every signed-in load, not only
 * at `/?shared=1`, so that a share made while signed out is uploaded after sign-in. A text or a
 * link shared without a file is not kept, and the line under the list tools says so.
 */
async function uploadShared(shared) {
  const { files, words } = await takeShared();
  if (files.length > 0) {
    note(files.length === 1 ? `Uploading ${files[0].name}, shared from another app.` : `Uploading ${files.length} files shared from another app.`);
    uploadAll(files);
  } else if (words.length > 0) {
    note("cubby keeps files: the text or link shared from another app was not kept. Share a file to upload it.");
  } else if (shared === "0") {
    note(SHARE_LOST, true);
  }
}

/** On a signed-out page: how many shared files wait for a sign-in, or that a share was lost. */
async function showSharedWaiting(shared) {
  const waiting = await countShared();
  const line = $("shared-note");
  if (waiting > 0) line.textContent = `${waiting === 1 ? "A file" : `${waiting} files`} shared from another app ${waiting === 1 ? "waits" : "wait"} here: ${waiting === 1 ? "it is" : "they are"} uploaded once you sign in.`;
  else if (shared === "0") line.textContent = SHARE_LOST;
  else return;
  line.hidden = false;
}

async function main() {
  registerServiceWorker();
  redirectOldAddress();
  const shared = takeSharedParameter();
  $("redirect-uri").textContent = `${location.origin}/auth/idp/callback`;
  let session;
  try {
    session = await api("/auth/session");
  } catch (err) {
    $("loading").hidden = true;
    // No answer at all (started from the home screen offline, or cubby down): the shell came from web/sw.js's cache.
    const unreachable = navigator.onLine ? "cubby cannot be reached: its server does not answer. Reload in a moment." : "This device is offline, so cubby cannot be reached. Reload once it is back online.";
    showError(err instanceof ApiError ? err : new Error(unreachable));
    return;
  }
  $("loading").hidden = true;
  if (!session.signed_in) {
    $(session.sign_in_configured ? "signed-out" : "not-configured").hidden = false;
    // Back to the section asked for once signed in (the sign-in's `next`, a same-origin path).
    if (location.pathname !== "/") $("sign-in").href = `/auth/login?next=${encodeURIComponent(location.pathname + location.search)}`;
    await showSharedWaiting(shared).catch(showError);
    return;
  }
  $("account").hidden = false;
  $("account-email").textContent = session.email;
  $("signed-in").hidden = false;
  $("sections").hidden = false;
  wire();
  // Whether to offer Admin: asked before a section shows, so that /admin knows what to say.
  isAdmin = await askAdmin();
  $("nav-admin").hidden = !isAdmin;
  await showSection(sectionFromUrl());
  // After the list is drawn: its drawing would take the line that says what the upload does. Not
  // through attempt(), which would hide what the loads above may have shown in the alert line.
  await uploadShared(shared).catch(showError);
}

main();
