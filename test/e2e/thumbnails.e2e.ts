// Thumbnails in the browser (CONTRACT §15), in Debian's Chromium against the compiled binary
// (whose WebAssembly codecs must then work from the one file): a photo, a video and a PDF
// uploaded through the dashboard's file picker; the photo's row shows the server's WebP, the
// video's the poster the dashboard made from its frame and sent, the PDF's its first page drawn
// by pdf.js; a share of both shows them to a browser
// without a session, at 390 and 1280 px in light and dark, axe-clean, and loading them used no
// download. Screenshots: test-results/screenshots/thumbnails-*.png.
import { expect, test, type Locator, type Page } from "@playwright/test";
import fs from "node:fs";
import path from "node:path";
import { apiInPage, buildBinary, everyScreen, SCREENSHOTS, signIn, startStack, watchPage, type Stack } from "./fixtures.ts";

test.describe.configure({ mode: "serial" });

let stack: Stack;

test.beforeAll(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  stack = await startStack(buildBinary(), true);
});
test.afterAll(async () => {
  await stack?.stop();
});

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `thumbnails-${name}.png`), fullPage: true });

/** A PNG photo-like picture and a two-second WebM video (VP8), both drawn in the page (canvas, MediaRecorder). */
async function makeMedia(page: Page): Promise<{ png: Buffer; webm: Buffer }> {
  const [png, webm] = await page.evaluate(async () => {
    const doc = (globalThis as any).document;
    const canvas = doc.createElement("canvas");
    canvas.width = 960;
    canvas.height = 640;
    const g = canvas.getContext("2d");
    const paint = (shift: number) => {
      const grad = g.createLinearGradient(0, 0, canvas.width, canvas.height);
      grad.addColorStop(0, "#1e6bd6");
      grad.addColorStop(1, "#f5b642");
      g.fillStyle = grad;
      g.fillRect(0, 0, canvas.width, canvas.height);
      g.fillStyle = "#ffffff";
      g.beginPath();
      g.arc(300 + shift, 320, 140, 0, Math.PI * 2);
      g.fill();
    };
    paint(0);
    const base64 = async (blob: Blob) => {
      const bytes = new Uint8Array(await blob.arrayBuffer());
      let s = "";
      for (const b of bytes) s += String.fromCharCode(b);
      return btoa(s);
    };
    const png = await new Promise<Blob>((resolve) => canvas.toBlob((b: Blob) => resolve(b), "image/png"));
    const stream = canvas.captureStream(25);
    const recorder = new (globalThis as any).MediaRecorder(stream, { mimeType: "video/webm;codecs=vp8" });
    const chunks: Blob[] = [];
    recorder.ondataavailable = (e: { data: Blob }) => chunks.push(e.data);
    const stopped = new Promise((resolve) => (recorder.onstop = resolve));
    recorder.start();
    const started = performance.now();
    const requestAnimationFrame = (globalThis as any).requestAnimationFrame as (f: () => void) => void;
    await new Promise<void>((resolve) => {
      const frame = () => {
        const t = performance.now() - started;
        paint((t / 2000) * 300);
        if (t < 2000) requestAnimationFrame(frame);
        else resolve();
      };
      requestAnimationFrame(frame);
    });
    recorder.stop();
    await stopped;
    return [await base64(png), await base64(new Blob(chunks, { type: "video/webm" }))];
  });
  return { png: Buffer.from(png, "base64"), webm: Buffer.from(webm, "base64") };
}

/**
 * A one-page PDF of 400 × 200 points: a blue band and a line of text (PDF 1.4, ISO 32000-1 §7.5:
 * the objects, then the cross-reference table with each one's byte offset).
 */
function onePagePdf(): Buffer {
  const content = "0.12 0.42 0.84 rg 0 120 400 80 re f BT /F1 28 Tf 0 0 0 rg 20 60 Td (Quarterly report) Tj ET";
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 400 200] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
  ];
  let pdf = "%PDF-1.4\n";
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(pdf.length);
    pdf += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("")}`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, "latin1");
}

/** Waits until an `<img>` has loaded a picture (not a broken one). */
async function expectLoaded(img: Locator): Promise<void> {
  await expect.poll(() => img.evaluate((i: any) => i.complete && i.naturalWidth > 0), { timeout: 20_000 }).toBe(true);
}

test("a photo's and a video's thumbnails in the dashboard and on a share's page, counted never", async ({ page, browser }) => {
  const watch = watchPage(page, stack);
  await signIn(page, stack, "alice");
  const { png, webm } = await makeMedia(page);
  await page.locator("#file-input").setInputFiles([
    { name: "lake.png", mimeType: "image/png", buffer: png },
    { name: "clip.webm", mimeType: "video/webm", buffer: webm },
    { name: "report.pdf", mimeType: "application/pdf", buffer: onePagePdf() },
  ]);
  const rows = page.locator("#files tbody tr");
  const photoRow = rows.filter({ hasText: "lake.png" });
  const videoRow = rows.filter({ hasText: "clip.webm" });
  await expect(photoRow).toHaveCount(1, { timeout: 20_000 });
  await expect(videoRow).toHaveCount(1, { timeout: 20_000 });
  const photoId = (await photoRow.getAttribute("data-id"))!;
  const videoId = (await videoRow.getAttribute("data-id"))!;
  const pdfRow = rows.filter({ hasText: "report.pdf" });
  await expect(pdfRow).toHaveCount(1, { timeout: 20_000 });
  await expectLoaded(photoRow.locator("img.thumb"));
  // The poster is sent before the row is placed: the row's image loads it.
  await expectLoaded(videoRow.locator("img.thumb"));
  const size = (img: Locator) => img.evaluate((i: any) => [i.naturalWidth, i.naturalHeight]);
  expect(await size(photoRow.locator("img.thumb"))).toEqual([320, 213]);
  // 960 × 640 → a 640 × 427 poster → 320 × 213 or 214, as the resizer rounds the half.
  const [width, height] = await size(videoRow.locator("img.thumb"));
  expect([width, Math.abs(height - 213.5) <= 0.5]).toEqual([320, true]);
  // The PDF's first page, drawn by pdf.js in the page at 640 × 320, made 320 × 160 by the server.
  await expectLoaded(pdfRow.locator("img.thumb"));
  expect(await size(pdfRow.locator("img.thumb"))).toEqual([320, 160]);
  await shot(page, "dashboard");

  const share = await apiInPage<{ url: string }>(page, "POST", "/v1/shares", { items: [{ file_id: photoId }, { file_id: videoId }], max_downloads: 5 });
  const guestContext = await browser.newContext();
  try {
    const guest = await guestContext.newPage();
    const guestWatch = watchPage(guest, stack);
    await everyScreen(guest, "thumbnails-share-page", async () => {
      expect((await guest.goto(share.url))?.status()).toBe(200);
      const thumbs = guest.locator(".shared-file img.thumb");
      await expect(thumbs).toHaveCount(2);
      for (const img of await thumbs.all()) await expectLoaded(img);
    });
    expect(guestWatch.errors).toEqual([]);
    expect(guestWatch.foreign).toEqual([]);
  } finally {
    await guestContext.close();
  }
  const listed = await apiInPage<{ shares: { url: string; download_count: number }[] }>(page, "GET", "/v1/shares");
  expect(listed.shares.find((s) => s.url === share.url)?.download_count).toBe(0);
  expect(watch.errors).toEqual([]);
});
