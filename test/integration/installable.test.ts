// test-lists: default
// The installable dashboard over real HTTP (CONTRACT §15, issue 40): the web app manifest and the
// service worker are served with their media types and the dashboard's headers, the manifest's
// icons answer with theirs, its colours are app.css's light ones; `POST /share-target` without
// the service worker (a share before it was installed) answers 303 to `/?shared=0` without
// reading or keeping anything, whoever sends it. test/e2e/installable.e2e.ts has the browser.
import { afterAll, beforeAll, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { DASHBOARD_HEADERS } from "../../src/http/static.ts";
import { ROOT, startServer, type RunningServer } from "../support/server.ts";

let server: RunningServer;

beforeAll(async () => {
  server = await startServer();
}, 60_000);
afterAll(() => server?.[Symbol.asyncDispose]());

/** The status and the headers a person's browser relies on, of `GET urlPath`. */
async function head(urlPath: string): Promise<Record<string, string | number | null>> {
  const res = await fetch(`${server.url}${urlPath}`);
  await res.arrayBuffer();
  return {
    status: res.status,
    type: res.headers.get("content-type"),
    cache: res.headers.get("cache-control"),
    csp: res.headers.get("content-security-policy"),
    nosniff: res.headers.get("x-content-type-options"),
  };
}

const SERVED = { status: 200, cache: "no-cache", csp: DASHBOARD_HEADERS["content-security-policy"], nosniff: "nosniff" };

test("the manifest: its media type, the app's names, scope, colours, icons and share target", async () => {
  expect(await head("/manifest.webmanifest")).toEqual({ ...SERVED, type: "application/manifest+json" });
  const manifest = (await (await fetch(`${server.url}/manifest.webmanifest`)).json()) as Record<string, any>;
  // The light scheme's background (app.css :root), which is also the header's.
  const lightBg = /:root \{[^}]*--bg: (#[0-9a-f]{6});/.exec(fs.readFileSync(path.join(ROOT, "web/app.css"), "utf8"))![1];
  expect(manifest).toMatchObject({
    name: "cubby",
    short_name: "cubby",
    start_url: "/",
    scope: "/",
    display: "standalone",
    theme_color: lightBg,
    background_color: lightBg,
    share_target: {
      action: "/share-target",
      method: "POST",
      enctype: "multipart/form-data",
      params: { title: "title", text: "text", url: "url", files: [{ name: "files", accept: ["*/*"] }] },
    },
  });
  expect(manifest.icons).toEqual([
    { src: "/assets/icon.svg", sizes: "any", type: "image/svg+xml", purpose: "any" },
    { src: "/assets/icon-maskable.svg", sizes: "any", type: "image/svg+xml", purpose: "maskable" },
  ]);
  for (const icon of manifest.icons as { src: string; type: string }[]) {
    const res = await fetch(`${server.url}${icon.src}`);
    expect({ src: icon.src, status: res.status, type: res.headers.get("content-type"), svg: (await res.text()).startsWith("<svg") }).toEqual({ src: icon.src, status: 200, type: icon.type, svg: true });
  }
  // The page links it, with the theme's colour for each scheme.
  const page = await (await fetch(`${server.url}/`)).text();
  expect(page).toContain('<link rel="manifest" href="/manifest.webmanifest">');
  expect(page).toContain(`<meta name="theme-color" content="${lightBg}" media="(prefers-color-scheme: light)">`);
});

test("the service worker: at the root (its scope is the whole origin, no Service-Worker-Allowed needed), never cached by HTTP", async () => {
  expect(await head("/sw.js")).toEqual({ ...SERVED, type: "text/javascript; charset=utf-8" });
  const res = await fetch(`${server.url}/sw.js`);
  expect(res.headers.get("service-worker-allowed")).toBeNull();
  expect(await res.text()).toContain('addEventListener("fetch"');
});

test("POST /share-target without the service worker: 303 to /?shared=0, nothing read or kept, signed in or not", async () => {
  const session = await server.signIn("sharer@example.com");
  const share = () => {
    const form = new FormData();
    form.set("title", "holiday");
    form.set("text", "look at this");
    form.set("url", "https://example.com/");
    form.append("files", new File([new Uint8Array(2 * 1024 * 1024).fill(7)], "photo.jpg", { type: "image/jpeg" }));
    return form;
  };
  const callers: Record<string, string>[] = [{}, { cookie: session, origin: server.url }];
  for (const headers of callers) {
    const res = await fetch(`${server.url}/share-target`, { method: "POST", body: share(), headers, redirect: "manual" });
    expect({ status: res.status, location: res.headers.get("location"), cache: res.headers.get("cache-control"), body: await res.text() }).toEqual({
      status: 303,
      location: "/?shared=0",
      cache: "no-store",
      body: "",
    });
  }
  const files = await fetch(`${server.url}/v1/files`, { headers: { cookie: session } });
  expect(((await files.json()) as { files: unknown[] }).files).toEqual([]);
  // Only POST: the share target is no page of its own.
  expect((await fetch(`${server.url}/share-target`)).status).toBe(404);
});
