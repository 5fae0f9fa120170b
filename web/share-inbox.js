// What other apps shared into the installed dashboard (CONTRACT §15, a Web Share Target): web/sw.js
// receives the share and keeps each file in the share inbox, a cache of its own, until the
// dashboard, signed in, takes the files and uploads them (web/app.js, uploadShared).

/** The inbox: the same name as web/sw.js's INBOX_CACHE (test/unit/service-worker.test.ts checks it). */
export const INBOX_CACHE = "cubby-share-inbox";

/** The inbox when this browser has one (the Cache API, as service workers, needs https or localhost); else undefined. */
async function openInbox() {
  if (!("caches" in globalThis) || !(await caches.has(INBOX_CACHE))) return undefined;
  return caches.open(INBOX_CACHE);
}

/**
 * Takes everything in the inbox out of it. Each entry is read, then claimed by deleting it: of
 * two tabs opened at once, only the one whose delete succeeds keeps it, so no file is uploaded twice.
 * @returns {Promise<{ files: File[], words: { title: string, text: string, url: string }[] }>}
 *   the shared files, in the order shared, and the titles, texts and links shared with or without them
 */
export async function takeShared() {
  const taken = { files: [], words: [] };
  const inbox = await openInbox();
  if (inbox === undefined) return taken;
  for (const request of await inbox.keys()) {
    const entry = await inbox.match(request);
    if (entry === undefined) continue;
    const isFile = entry.headers.get("x-share-kind") === "file";
    const body = isFile ? await entry.blob() : await entry.json();
    if (!(await inbox.delete(request))) continue;
    if (isFile) taken.files.push(new File([body], decodeURIComponent(entry.headers.get("x-share-name") ?? "shared"), { type: entry.headers.get("x-share-type") ?? "" }));
    else taken.words.push(body);
  }
  return taken;
}

/** How many shared files wait in the inbox (none are taken). */
export async function countShared() {
  const inbox = await openInbox();
  if (inbox === undefined) return 0;
  const entries = await inbox.matchAll();
  return entries.filter((entry) => entry.headers.get("x-share-kind") === "file").length;
}
