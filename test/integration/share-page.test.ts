// test-lists: workers postgres-s3
// Pages for people at the far end of a link (CONTRACT §11), over real HTTP: a browser navigation
// to a share link gets the share page (name, size, type, sharer, expiry, downloads left, preview,
// Download) and counts nothing; scripts get the bytes as in §8; the limit stays exact with pages
// and downloads racing; errors of share links, content URLs and unknown paths are pages for
// browsers and the same JSON as before for programs, with the same status. Over h2c as well.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { ShareJson } from "../../src/domain/share.ts";
import { client, startServer, type FileJson, type RunningServer } from "../support/server.ts";
import { h2Request } from "../support/h2.ts";
import { pageHeader } from "../../src/serving/pages.ts";

let server: RunningServer;
let owner: string;

/** What Chromium sends for a navigation. */
const BROWSER = { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8" };

beforeAll(async () => {
  server = await startServer({ env: { RATE_LIMIT_AUTH_FAILURES: "2" } });
  owner = await server.mintKey("sharer@example.com");
}, 60_000);
afterAll(() => server?.[Symbol.asyncDispose]());

async function upload(body: string | Uint8Array, query: string): Promise<FileJson> {
  return client(server, owner).upload(body, query);
}

async function share(file: FileJson, body: Record<string, unknown> = {}): Promise<ShareJson> {
  const res = await client(server, owner).fetch(`/v1/files/${file.id}/shares`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  expect(res.status).toBe(200);
  return (await res.json()) as ShareJson;
}

async function downloadCount(file: FileJson, s: ShareJson): Promise<number> {
  const listed = (await (await client(server, owner).fetch(`/v1/files/${file.id}/shares`)).json()) as { shares: ShareJson[] };
  return listed.shares.find((x) => x.id === s.id)!.download_count;
}

test("a browser gets the share page: name, size, type, sharer, expiry, downloads left, preview and Download; it counts nothing", async () => {
  const file = await client(server, owner).upload(new Uint8Array(2500).fill(7), "?name=holiday%20%3Cphoto%3E.png&visibility=private", { "content-type": "image/png" });
  const s = await share(file, { max_downloads: 3, ttl: "2d" });
  const page = await fetch(s.url, { headers: BROWSER });
  expect(page.status).toBe(200);
  expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
  expect(page.headers.get("cache-control")).toBe("no-store");
  expect(page.headers.get("vary")).toBe("Accept");
  // A limited share's page has one script, cubby's own, to keep "Downloads left" true (CONTRACT §15).
  expect(page.headers.get("content-security-policy")).toEndWith("; script-src 'self'; connect-src 'self'");
  const html = await page.text();
  expect(html).toContain('<script src="/assets/share-page.js" defer></script>');
  expect(html).toContain("<dd data-downloads-left>3 of 3</dd>");
  expect(html).toContain("<h1 class=\"file-name\">holiday &#60;photo&#62;.png</h1>");
  for (const fact of ["2.4 KiB", "image/png", "<dt>Shared by</dt><dd>sharer</dd>", "UTC</time> (in 2 days)", "3 of 3"]) expect(html).toContain(fact);
  // Dates in the reader's language (Accept-Language), in UTC, which the page names (page-time.ts).
  expect(html).toContain(`<time datetime="${s.expire_time}">`);
  const american = await (await fetch(s.url, { headers: { ...BROWSER, "accept-language": "en-US,en;q=0.9" } })).text();
  expect(american).toMatch(/<dt>Expires<\/dt><dd><time datetime="[^"]+">[A-Z][a-z]{2} \d{1,2}, \d{4}, \d{1,2}:\d\d\s[AP]M UTC<\/time> \(in 2 days\)/);
  // The e-mail only where the owner chose to show it (CONTRACT §15).
  expect(html).not.toContain("sharer@example.com");
  const path = new URL(s.url).pathname;
  expect(html).toContain(`href="${path}?download=1" download`);
  // A limited share's preview starts closed, and says what opening it costs.
  expect(html).toContain(`<details class="preview"><summary>Preview (opening it uses one download)</summary><img class="preview-media" src="${path}?download=0"`);
  expect(await downloadCount(file, s)).toBe(0);

  const head = await fetch(s.url, { method: "HEAD", headers: BROWSER });
  expect({ status: head.status, type: head.headers.get("content-type"), length: head.headers.get("content-length") }).toEqual({
    status: 200,
    type: "text/html; charset=utf-8",
    length: String(Buffer.byteLength(html)),
  });
  expect(await downloadCount(file, s)).toBe(0);
});
test("a chat's link preview (no cookies, a previewer's User-Agent, any Accept) gets the page with Open Graph tags and counts nothing; og:image only without password or limit (CONTRACT §15)", async () => {
  const photo = await upload(new Uint8Array(3000).fill(9), "?name=beach%20%22day%22.png&visibility=private");
  const free = await share(photo, {});
  const limited = await share(photo, { max_downloads: 2 });
  const folder = await client(server, owner).fetch("/v1/folders", { method: "POST", body: JSON.stringify({ name: "Album" }), headers: { "content-type": "application/json" } });
  const folderId = ((await folder.json()) as { id: string }).id;
  const folderShare = (await (await client(server, owner).fetch(`/v1/folders/${folderId}/shares`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } })).json()) as ShareJson;
  const agents = [
    "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/114.0.0.0 Safari/537.36 Edge/114.0.1823.43 MicrosoftPreview/2.0 +https://aka.ms/MicrosoftPreview",
    "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
    "WhatsApp/2.23.20.0",
    "TelegramBot (like TwitterBot)",
    "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
  ];
  for (const ua of agents) {
    for (const method of ["GET", "HEAD"]) {
      const res = await fetch(free.url, { method, headers: { "user-agent": ua, accept: "*/*" } });
      expect({ ua, method, status: res.status, type: res.headers.get("content-type") }).toEqual({ ua, method, status: 200, type: "text/html; charset=utf-8" });
      if (method === "GET") {
        const html = await res.text();
        expect(html).toContain('<meta property="og:title" content="beach &#34;day&#34;.png">');
        expect(html).toContain('<meta property="og:description" content="2.9 KiB · image/png">');
        expect(html).toContain(`<meta property="og:url" content="${free.url}">`);
        // The image's thumbnail (CONTRACT §15), which counts nothing either.
        expect(html).toContain(`<meta property="og:image" content="${free.url}?thumbnail=1">`);
      }
    }
  }
  expect(await downloadCount(photo, free)).toBe(0);
  const limitedPage = await (await fetch(limited.url, { headers: { "user-agent": agents[0]! } })).text();
  expect(limitedPage).toContain('<meta property="og:title"');
  expect(limitedPage).not.toContain("og:image");
  expect(await downloadCount(photo, limited)).toBe(0);
  const folderPage = await fetch(folderShare.url, { headers: { "user-agent": agents[2]! } });
  expect({ status: folderPage.status, type: folderPage.headers.get("content-type") }).toEqual({ status: 200, type: "text/html; charset=utf-8" });
  expect(await folderPage.text()).toContain('<meta property="og:title" content="Album">');
  // A script asking for the file still gets it, counted.
  expect((await fetch(limited.url, { headers: { "user-agent": "curl/8.5.0" } })).headers.get("content-type")).toBe("image/png");
  expect(await downloadCount(photo, limited)).toBe(1);
});

test("?status=1 answers the downloads left as JSON and counts nothing; behind a password it wants the password; used up, 410; a share without a limit has no script", async () => {
  const file = await upload("counted", "?name=counted.txt");
  const s = await share(file, { max_downloads: 2 });
  const status = (headers: Record<string, string> = {}) => fetch(`${s.url}?status=1`, { headers: { accept: "application/json", ...headers } });
  const first = await status();
  expect({ status: first.status, type: first.headers.get("content-type"), cache: first.headers.get("cache-control"), body: await first.json() }).toEqual({
    status: 200,
    type: "application/json",
    cache: "no-store",
    body: { max_downloads: 2, download_count: 0, downloads_left: 2, expire_time: "" },
  });
  expect(await downloadCount(file, s)).toBe(0);
  await (await fetch(s.url)).arrayBuffer();
  expect(await (await status()).json()).toMatchObject({ download_count: 1, downloads_left: 1 });
  await (await fetch(s.url)).arrayBuffer();
  expect((await status()).status).toBe(410);
  expect(await downloadCount(file, s)).toBe(2);

  const locked = await share(file, { max_downloads: 5, password: "open sesame" });
  expect((await fetch(`${locked.url}?status=1`)).status).toBe(401);
  const unlocked = await fetch(`${locked.url}?status=1`, { headers: { authorization: `Basic ${btoa(":open sesame")}` } });
  expect(await unlocked.json()).toMatchObject({ max_downloads: 5, downloads_left: 5 });

  const free = await share(file, {});
  const page = await fetch(free.url, { headers: BROWSER });
  expect(page.headers.get("content-security-policy")).not.toContain("script-src");
  const html = await page.text();
  expect(html).not.toContain("<script");
  expect(html).toContain("<dd data-downloads-left>No limit</dd>");
  expect(await (await fetch(`${free.url}?status=1`)).json()).toMatchObject({ max_downloads: null, downloads_left: null });
  const script = await fetch(`${server.url}/assets/share-page.js`);
  expect({ status: script.status, type: script.headers.get("content-type") }).toEqual({ status: 200, type: "text/javascript; charset=utf-8" });
});

test("the page names the sharer by their display name, with their e-mail only when they chose to show it (CONTRACT §15)", async () => {
  const file = await client(server, owner).upload("named", "?name=named.txt");
  const s = await share(file, {});
  const me = (body: unknown) => fetch(`${server.url}/v1/me`, { method: "PATCH", body: JSON.stringify(body), headers: { authorization: `Bearer ${owner}`, "content-type": "application/json" } });
  try {
    expect((await me({ display_name: "Sam <S.>", show_email_on_shares: true })).status).toBe(200);
    expect(await (await fetch(s.url, { headers: BROWSER })).text()).toContain("<dt>Shared by</dt><dd>Sam &#60;S.&#62; (sharer@example.com)</dd>");
    expect((await me({ show_email_on_shares: false })).status).toBe(200);
    const html = await (await fetch(s.url, { headers: BROWSER })).text();
    expect(html).toContain("<dt>Shared by</dt><dd>Sam &#60;S.&#62;</dd>");
    expect(html).not.toContain("sharer@example.com");
  } finally {
    await me({ display_name: "", show_email_on_shares: false });
  }
});


test("scripts get the bytes as before; ?download=1 and ?download=0 get them from a browser too, each counted", async () => {
  const file = await client(server, owner).upload("plain words\n", "?name=notes.txt&visibility=private", { "content-type": "text/plain" });
  const s = await share(file);
  const script = await fetch(s.url);
  expect({ status: script.status, type: script.headers.get("content-type"), body: await script.text() }).toEqual({ status: 200, type: "text/plain", body: "plain words\n" });
  const curl = await fetch(s.url, { headers: { accept: "*/*" } });
  expect(await curl.text()).toBe("plain words\n");
  const button = await fetch(`${s.url}?download=1`, { headers: BROWSER });
  expect({ status: button.status, disposition: button.headers.get("content-disposition"), body: await button.text() }).toEqual({
    status: 200,
    disposition: expect.stringMatching(/^attachment; filename="notes.txt"/),
    body: "plain words\n",
  });
  const preview = await fetch(`${s.url}?download=0`, { headers: BROWSER });
  expect({ disposition: preview.headers.get("content-disposition"), body: await preview.text() }).toEqual({ disposition: expect.stringMatching(/^inline/), body: "plain words\n" });
  expect(await downloadCount(file, s)).toBe(4);
  // No limit: the text preview is open.
  expect(await (await fetch(s.url, { headers: BROWSER })).text()).toContain('<details class="preview" open><summary>Preview</summary><iframe class="preview-frame text"');
});

test("each type gets its preview element: video, audio, PDF; other types none", async () => {
  const cases: [string, string, string][] = [
    ["clip.mp4", "video/mp4", "<video class=\"preview-media\""],
    ["song.mp3", "audio/mpeg", "<audio "],
    ["paper.pdf", "application/pdf", "<iframe class=\"preview-frame\""],
  ];
  for (const [name, type, element] of cases) {
    const file = await client(server, owner).upload("bytes", `?name=${name}&visibility=private`, { "content-type": type });
    const html = await (await fetch((await share(file, { max_downloads: 1 })).url, { headers: BROWSER })).text();
    expect(html).toContain(element);
    // Limited: media load nothing until played.
    if (!type.startsWith("application/")) expect(html).toContain('preload="none"');
  }
  const zip = await client(server, owner).upload("PK", "?name=a.zip&visibility=private", { "content-type": "application/zip" });
  expect(await (await fetch((await share(zip)).url, { headers: BROWSER })).text()).not.toContain("<details");
});

test("a password-protected share shows the form without the file's name, then the page after the right password", async () => {
  const file = await upload("secret plans", "?name=plans-2027.txt&visibility=private");
  const s = await share(file, { password: "open sesame" });
  const form = await fetch(s.url, { headers: BROWSER });
  const formHtml = await form.text();
  expect(form.status).toBe(401);
  expect(formHtml).toContain('<form method="post">');
  expect(formHtml).not.toContain("plans-2027");
  const unlocked = await fetch(s.url, { method: "POST", body: new URLSearchParams({ password: "open sesame" }), redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded" } });
  const cookie = unlocked.headers.get("set-cookie")!.split(";")[0]!;
  const page = await fetch(s.url, { headers: { ...BROWSER, cookie } });
  expect(page.status).toBe(200);
  expect(await page.text()).toContain("plans-2027.txt");
});

test("max_downloads stays exact with 10 page views and 20 script downloads at once", async () => {
  const bytes = crypto.getRandomValues(new Uint8Array(64 * 1024));
  const file = await upload(bytes, "?name=limited.bin&visibility=private");
  const s = await share(file, { max_downloads: 5 });
  const requests = [
    ...Array.from({ length: 10 }, async () => {
      const r = await fetch(s.url, { headers: BROWSER });
      return { kind: "page", status: r.status, page: (await r.text()).includes("<!doctype html>") };
    }),
    ...Array.from({ length: 20 }, async () => {
      const r = await fetch(s.url);
      const body = new Uint8Array(await r.arrayBuffer());
      return { kind: "bytes", status: r.status, whole: r.status === 200 && Buffer.from(body).equals(Buffer.from(bytes)) };
    }),
  ];
  const outcomes = await Promise.all(requests);
  const downloads = outcomes.filter((o) => o.kind === "bytes");
  expect(downloads.filter((o) => o.status === 200 && "whole" in o && o.whole).length).toBe(5);
  expect(downloads.filter((o) => o.status === 410).length).toBe(15);
  // Every page view got a page: the share page while downloads were left, the 410 page after.
  for (const o of outcomes.filter((o) => o.kind === "page")) expect({ status: [200, 410].includes(o.status), page: "page" in o && o.page }).toEqual({ status: true, page: true });
  expect(await downloadCount(file, s)).toBe(5);
});

test("errors are pages for a browser and the same JSON as before for a program, with the same status", async () => {
  const file = await upload("x", "?name=gone.txt&visibility=private");
  const used = await share(file, { max_downloads: 1 });
  expect((await fetch(used.url)).status).toBe(200);
  const deleted = await share(file);
  expect((await client(server, owner).fetch(`/v1/shares/${deleted.id}`, { method: "DELETE" })).status).toBe(200);
  const privateFile = await upload("mine", "?visibility=private");
  const other = await server.mintKey("other@example.com");
  const cases: [string, Record<string, string>, number, number, string][] = [
    [used.url, {}, 410, 9, "this share link has reached its download limit"],
    [deleted.url, {}, 410, 9, "this share link was deleted"],
    [`${server.url}/s/${"n".repeat(32)}`, {}, 404, 5, "no such share link"],
    [`${server.url}/${"A".repeat(21)}`, {}, 404, 5, "file not found"],
    [`${server.url}/${privateFile.id}`, { authorization: `Bearer ${other}` }, 404, 5, "file not found"],
    [`${server.url}/no/such/page`, {}, 404, 5, "not found"],
  ];
  for (const [url, headers, status, code, message] of cases) {
    const page = await fetch(url, { headers: { ...headers, ...BROWSER } });
    const html = await page.text();
    expect({ url, status: page.status, type: page.headers.get("content-type") }).toEqual({ url, status, type: "text/html; charset=utf-8" });
    // A recipient (a share link, a content URL) is sent back to whoever sent the link; an unknown
    // path of the app to the dashboard.
    if (url.endsWith("/no/such/page")) expect(html).toContain('<a class="button" href="/">Back to cubby</a>');
    else {
      expect(html).toContain("ask whoever sent you the link for a new one");
      expect(html).not.toContain("Back to cubby");
    }
    const program = await fetch(url, { headers: { ...headers, accept: "application/json" } });
    expect({ url, status: program.status, json: await program.json() }).toEqual({ url, status, json: { code, message: expect.stringContaining(message), details: [] } });
  }
});

test("429 with Retry-After is a page for a browser too (wrong share passwords)", async () => {
  const file = await upload("x", "?visibility=private");
  const s = await share(file, { password: "right" });
  const wrong = { ...BROWSER, authorization: `Basic ${Buffer.from("x:wrong").toString("base64")}`, "x-forwarded-for": "" };
  // From another loopback address: the other tests' address keeps its budget.
  const from = s.url.replace("127.0.0.1", "127.0.0.3").replace("localhost", "127.0.0.3");
  let last: Response | undefined;
  for (let i = 0; i < 4; i++) last = await fetch(from, { headers: wrong });
  expect(last!.status).toBe(429);
  expect(Number(last!.headers.get("retry-after"))).toBeGreaterThan(0);
  const html = await last!.text();
  expect(html).toContain("<h1>Too many requests</h1>");
  expect(html).toMatch(/Too many wrong passwords came from your address\. Wait \d+ seconds, then try again\./);

  // The password form's POST, as a person sends it (CONTRACT §15): the same page for them, with
  // their way back, not the JSON of a program nor the dashboard's; a program gets the JSON. (The
  // kernel may give the connection the source address the loop above limited: the form is then
  // refused at once, else after the wrong passwords the limit allows.)
  const post = (accept: string) => fetch(from, { method: "POST", body: new URLSearchParams({ password: "wrong" }), redirect: "manual", headers: { accept, "content-type": "application/x-www-form-urlencoded" } });
  const statuses: number[] = [];
  let limited: Response;
  do {
    limited = await post(BROWSER.accept);
    statuses.push(limited.status);
  } while (limited.status === 401 && statuses.length < 4);
  expect(statuses.slice(0, -1).every((status) => status === 401)).toBe(true);
  const page = await limited.text();
  expect({ status: limited.status, type: limited.headers.get("content-type"), retry: Number(limited.headers.get("retry-after")) > 0 }).toEqual({ status: 429, type: "text/html; charset=utf-8", retry: true });
  expect(page).toMatch(/<p role="alert">Too many wrong passwords came from your address\. Wait \d+ seconds, then try again\.<\/p>/);
  expect(page).toContain("ask whoever sent you the link for a new one");
  expect(page).not.toContain("Back to cubby");
  expect(page).not.toContain("<script");
  const program = await post("application/json");
  expect({ status: program.status, code: ((await program.json()) as { code: number }).code }).toEqual({ status: 429, code: 8 });
});

test("every page a recipient or a guest sees has the same header, without a way to the dashboard; pages that run no script carry none (CONTRACT §15)", async () => {
  const file = await upload("one of several", "?name=photo.txt&visibility=private");
  const free = await share(file);
  const limited = await share(file, { max_downloads: 3 });
  const locked = await share(file, { password: "open sesame" });
  const revoked = await share(file);
  expect((await client(server, owner).fetch(`/v1/shares/${revoked.id}`, { method: "DELETE" })).status).toBe(200);
  const folder = (await (await client(server, owner).fetch("/v1/folders", { method: "POST", body: JSON.stringify({ name: "Album for the header" }), headers: { "content-type": "application/json" } })).json()) as { id: string };
  const folderShare = (await (await client(server, owner).fetch(`/v1/folders/${folder.id}/shares`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } })).json()) as ShareJson;
  const link = (await (await client(server, owner).fetch("/v1/upload-links", { method: "POST", body: "{}", headers: { "content-type": "application/json" } })).json()) as { url: string };
  const pages: [string, string, number, boolean][] = [
    ["the share page", free.url, 200, false],
    ["a limited share's page", limited.url, 200, true],
    ["the password form", locked.url, 401, false],
    ["a folder's share page", folderShare.url, 200, false],
    ["a folder not in the share", `${folderShare.url}?folder=${"F".repeat(21)}`, 404, false],
    ["a revoked share", revoked.url, 410, false],
    ["an unknown share", `${server.url}/s/${"n".repeat(32)}`, 404, false],
    ["the guest upload page", link.url, 200, true],
    ["an unknown upload link", `${server.url}/u/${"x".repeat(32)}`, 404, false],
  ];
  for (const [what, url, status, script] of pages) {
    const res = await fetch(url, { headers: BROWSER });
    const html = await res.text();
    expect({ what, status: res.status, header: html.includes(`<body>${pageHeader()}<main`), toDashboard: html.includes('href="/"'), script: html.includes("<script") }).toEqual({
      what,
      status,
      header: true,
      toDashboard: false,
      script,
    });
    // A page without a script keeps a CSP that runs none.
    if (!script && url.includes("/s/")) expect(res.headers.get("content-security-policy")).not.toContain("script-src");
  }
});

test("over h2c the share page and the error pages are the same", async () => {
  const file = await upload("over h2", "?name=h2.txt&visibility=private");
  const s = await share(file);
  const page = await h2Request(server.url, new URL(s.url).pathname, BROWSER);
  expect(page.status).toBe(200);
  expect(page.body.toString()).toContain("h2.txt");
  const missing = await h2Request(server.url, `/s/${"m".repeat(32)}`, BROWSER);
  expect({ status: missing.status, type: missing.headers["content-type"] }).toEqual({ status: 404, type: "text/html; charset=utf-8" });
});
