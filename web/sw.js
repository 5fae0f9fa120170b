// cubby's service worker (CONTRACT §15, "Phones and capture tools"): it makes the dashboard an
// installable web app and receives what other apps share into it. It keeps only the shell (the
// page, its script, styles and icon, the same for every person) and never a file, a content
// URL, a share link or any answer of /v1, /auth or /dav: those carry one person's data, and a
// copy kept in the browser would outlive a sign-out, a revoked share or a deleted file.
// docs/design.md ("The installable dashboard") says why each choice.
//
// A classic worker script (not a module), so that every browser with service workers runs it.

/** The cache of the shell. A new name (a new version) when SHELL changes; older ones are deleted on activation. */
const SHELL_CACHE = "cubby-shell-v2";

/**
 * What the dashboard loads at start, and nothing else: the page, the scripts its modules import
 * (test/unit/service-worker.test.ts checks this list against index.html and app.js's imports),
 * the stylesheet, the icons and the manifest. pdf.js (1.7 MB, loaded only for a PDF's thumbnail) is
 * not in it.
 */
const SHELL = [
  "/",
  "/app.js",
  "/app.css",
  "/assets/tus.min.js",
  "/assets/qrcode.mjs",
  "/assets/progress.js",
  "/assets/tus-options.js",
  "/assets/share-inbox.js",
  "/assets/sharex.js",
  "/assets/size.js",
  "/assets/icon.svg",
  "/assets/icon-maskable.svg",
  "/manifest.webmanifest",
];

/**
 * The dashboard's section addresses (src/http/static.ts DASHBOARD_SECTIONS; the unit test checks
 * the two lists agree): the same page as `/`, so kept once, as `/`.
 */
const PAGES = ["/files", "/shares", "/links", "/webhooks", "/keys", "/admin"];

/** Where shared files wait for the dashboard (web/share-inbox.js reads it): a cache of its own, never served from. */
const INBOX_CACHE = "cubby-share-inbox";

/**
 * Where the browser can route requests without starting the worker (static routing, Chromium
 * 123+): the shell and the share target to the fetch handler below, everything else straight to
 * the network. So the API, uploads and downloads never wait for the worker to start, and an
 * upload's progress events come from the network as on a page without a worker. Elsewhere the
 * fetch handler sees every request and lets all but these go.
 */
const ROUTES = [
  { condition: { urlPattern: { pathname: "/share-target" } }, source: "fetch-event" },
  ...[...SHELL, ...PAGES].map((pathname) => ({ condition: { urlPattern: { pathname } }, source: "fetch-event" })),
  { condition: { urlPattern: { pathname: "/*" } }, source: "network" },
];

self.addEventListener("install", (event) => {
  // `reload`: past the HTTP cache, so a new worker starts with the shell the server has now.
  const shell = caches.open(SHELL_CACHE).then((cache) => cache.addAll(SHELL.map((path) => new Request(path, { cache: "reload" }))));
  event.waitUntil(Promise.all([shell, addRoutes(event)]).then(() => self.skipWaiting()));
});

/** Adds ROUTES where the browser has static routing; one that refuses them still gets the worker, without them. */
async function addRoutes(event) {
  if (typeof event.addRoutes !== "function") return;
  try {
    await event.addRoutes(ROUTES);
  } catch (err) {
    console.info(`cubby's service worker works without static routes here: ${err}`);
  }
}

self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) => Promise.all(names.filter((name) => name.startsWith("cubby-shell-") && name !== SHELL_CACHE).map((name) => caches.delete(name))))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener("fetch", (event) => {
  const { request } = event;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  if (request.method === "POST" && url.pathname === "/share-target") {
    event.respondWith(receiveShare(request));
    return;
  }
  // Anything else (the API, content URLs, share links, sign-in, WebDAV) goes to the network untouched.
  if (request.method === "GET" && SHELL.includes(url.pathname)) event.respondWith(shell(request, url.pathname));
  else if (request.method === "GET" && PAGES.includes(url.pathname)) event.respondWith(shell(request, "/"));
});

/**
 * Network first, so a new version of the page is picked up at once; the copy kept of the last
 * good answer when the network fails or answers a 5xx (a proxy while cubby restarts). `/?folder=…`,
 * `/?shared=1` and the sections (`/files?folder=…`, `/shares`, …) are the page `/`, kept once (the page is the same for everyone: who is signed
 * in is asked by the page itself, from /auth/session, which is never kept).
 */
async function shell(request, path) {
  const cache = await caches.open(SHELL_CACHE);
  try {
    const response = await fetch(request);
    if (response.ok) await cache.put(path, response.clone());
    // A redirect (a sign-in proxy in front of cubby) or a 4xx is the server's word: passed on as it is.
    if (response.status < 500) return response;
    return (await cache.match(path)) ?? response;
  } catch (err) {
    const kept = await cache.match(path);
    if (kept !== undefined) return kept;
    throw err;
  }
}

/**
 * A share from another app (the manifest's share_target: a multipart POST of `files`, `title`,
 * `text` and `url`): each file goes into the inbox as one entry, with its name and type in headers; a
 * title, text or link as one JSON entry. Then the dashboard, which takes them (web/share-inbox.js).
 * Entries of a share that the dashboard has not taken yet stay: a second share adds to them.
 */
async function receiveShare(request) {
  let form;
  try {
    form = await request.formData();
  } catch {
    return Response.redirect("/?shared=0", 303);
  }
  const inbox = await caches.open(INBOX_CACHE);
  const stamp = `${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
  const files = form.getAll("files").filter((f) => typeof f !== "string" && f.name !== "");
  await Promise.all(
    files.map((file, i) =>
      inbox.put(
        `/share-inbox/${stamp}/${i}`,
        new Response(file, { headers: { "x-share-kind": "file", "x-share-name": encodeURIComponent(file.name), "x-share-type": file.type } }),
      ),
    ),
  );
  const words = Object.fromEntries(["title", "text", "url"].map((name) => [name, String(form.get(name) ?? "")]));
  if (words.title !== "" || words.text !== "" || words.url !== "") {
    await inbox.put(`/share-inbox/${stamp}/words`, new Response(JSON.stringify(words), { headers: { "content-type": "application/json", "x-share-kind": "words" } }));
  }
  return Response.redirect("/?shared=1", 303);
}
