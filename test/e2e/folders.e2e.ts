// Folders in the dashboard (CONTRACT §12), in Chromium against the compiled binary: create a
// folder, open it (the address says which: /?folder={id}, Back and Forward work), upload into it,
// move files by the Move to… dialog and by dragging a row onto a folder row or a breadcrumb,
// rename, follow breadcrumbs, delete a folder with what it holds. Each step is checked through
// the REST API too, so the page cannot merely look right. Screenshots: test-results/screenshots/.
import { expect, test, type Locator, type Page } from "@playwright/test";
import fs from "node:fs";
import path from "node:path";
import { buildBinary, fetchInPage, SCREENSHOTS, signIn, startStack, watchPage, type Stack } from "./fixtures.ts";

test.describe.configure({ mode: "serial" });

let stack: Stack;

test.beforeAll(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  stack = await startStack(buildBinary(), true);
});
test.afterAll(() => stack?.stop());

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `folders-${name}.png`), fullPage: true });

/** A REST call from inside the signed-in page: the status and the JSON answer. */
async function apiInPage<T>(page: Page, method: string, url: string, body?: unknown): Promise<{ status: number; body: T }> {
  const answer = await fetchInPage(page, method, url, body);
  return { status: answer.status, body: (answer.text === "" ? null : JSON.parse(answer.text)) as T };
}

/** The names of the files directly in a folder (`root`: in none), asked of the API. */
async function namesIn(page: Page, folderId: string): Promise<string[]> {
  const { status, body } = await apiInPage<{ files: { name: string }[] }>(page, "GET", `/v1/folders/${folderId}/files?page_size=100`);
  expect(status).toBe(200);
  return body.files.map((f) => f.name).sort();
}

/**
 * Drags `source` onto `target` until `moved` holds. A drag whose row or target the list renders
 * anew under it (the list is refreshed after a navigation) is lost, as a person's would be, and
 * is made again; once the row has moved away there is nothing left to drag. (One full run lost
 * the first of these drags.)
 */
async function dragUntil(source: Locator, target: Locator, moved: () => Promise<void>): Promise<void> {
  await expect(async () => {
    if ((await source.count()) > 0) await source.dragTo(target, { timeout: 5_000 });
    await moved();
  }).toPass({ timeout: 20_000 });
}

test("folders: create, open, upload into, move by menu and by drag and drop, rename, breadcrumbs, delete with what it holds", async ({ page }) => {
  const { errors, foreign } = watchPage(page, stack);
  // Tall enough that a file row and the breadcrumbs it is dragged onto are on screen together:
  // Playwright's drag does not scroll mid-drag as a person's browser does near the window's edge.
  await page.setViewportSize({ width: 1100, height: 1000 });
  await signIn(page, stack, "alice");
  const files = page.locator("#files tbody tr");
  const folders = page.locator("#folders tbody tr");
  const heading = page.getByRole("heading", { level: 1 });
  const crumbs = page.getByRole("navigation", { name: "Folder path" });

  // A file at the top, to move later; no folders yet, so no folder list and no breadcrumbs.
  await page.locator("#file-input").setInputFiles({ name: "top.txt", mimeType: "text/plain", buffer: Buffer.from("at the top\n") });
  await expect(files.filter({ hasText: "top.txt" })).toHaveCount(1);
  await expect(page.locator("#folders")).toBeHidden();
  await expect(crumbs).toBeHidden();

  // New folder, at the top; the new folder's link gets focus.
  await page.getByRole("button", { name: "New folder" }).click();
  const nameDialog = page.getByRole("dialog");
  await expect(nameDialog.getByRole("heading")).toHaveText("New folder");
  await nameDialog.getByLabel("Name").fill("Projects");
  await nameDialog.getByRole("button", { name: "Create" }).click();
  await expect(nameDialog).toBeHidden();
  const projects = folders.filter({ hasText: "Projects" });
  await expect(projects).toContainText("no files");
  await expect(projects.getByRole("link", { name: "Projects" })).toBeFocused();
  const projectsId = (await projects.getAttribute("data-id"))!;
  expect((await apiInPage<{ name: string; parent_id: string }>(page, "GET", `/v1/folders/${projectsId}`)).body).toMatchObject({ name: "Projects", parent_id: "" });

  // The same name again is refused beside the field, and the dialog stays open.
  await page.getByRole("button", { name: "New folder" }).click();
  await nameDialog.getByLabel("Name").fill("Projects");
  await nameDialog.getByRole("button", { name: "Create" }).click();
  await expect(nameDialog.getByLabel("Name")).toHaveAttribute("aria-invalid", "true");
  await expect(nameDialog.getByRole("alert")).not.toBeEmpty();
  await shot(page, "name-taken");
  await nameDialog.getByRole("button", { name: "Cancel" }).click();
  await expect(nameDialog).toBeHidden();
  await expect(folders).toHaveCount(1);

  // Open it: the address names it, the heading and the breadcrumbs say where we are.
  await projects.getByRole("link", { name: "Projects" }).click();
  await expect(page).toHaveURL(`${stack.url}/files?folder=${projectsId}`);
  await expect(heading).toHaveText("Projects");
  await expect(heading).toBeFocused();
  await expect(crumbs.getByRole("link")).toHaveText(["Home", "Projects"]);
  await expect(crumbs.getByRole("link", { name: "Projects" })).toHaveAttribute("aria-current", "page");
  await expect(page.locator("#files-empty")).toHaveText("No files in this folder.");
  await expect(page.getByText("they go into Projects")).toBeVisible();

  // Upload into it: the file shows here, and it is in the folder, not at the top.
  await page.locator("#file-input").setInputFiles({ name: "report.txt", mimeType: "text/plain", buffer: Buffer.from("quarterly\n") });
  await expect(files.filter({ hasText: "report.txt" })).toHaveCount(1);
  await expect.poll(() => namesIn(page, projectsId)).toEqual(["report.txt"]);
  expect(await namesIn(page, "root")).toEqual(["top.txt"]);
  await expect(files).toHaveCount(1);

  // A sub-folder, then report.txt moved into it through its Move to… dialog.
  await page.getByRole("button", { name: "New folder" }).click();
  await expect(nameDialog.getByRole("heading")).toHaveText("New folder in Projects");
  await nameDialog.getByLabel("Name").fill("2026");
  await nameDialog.getByRole("button", { name: "Create" }).click();
  const sub = folders.filter({ hasText: "2026" });
  await expect(sub).toContainText("no files");
  const subId = (await sub.getAttribute("data-id"))!;
  await files.filter({ hasText: "report.txt" }).getByRole("button", { name: "Move to… report.txt" }).click();
  const moveDialog = page.getByRole("dialog");
  await expect(moveDialog.getByRole("heading")).toHaveText("Move report.txt");
  await expect(moveDialog.getByRole("radio")).toHaveCount(3);
  await expect(moveDialog.getByRole("radio", { name: "Home", exact: true })).toBeFocused();
  await expect(moveDialog.getByRole("radio", { name: "Projects (here)" })).toBeDisabled();
  await shot(page, "move-dialog");
  await moveDialog.getByRole("radio", { name: "Projects › 2026" }).check();
  await moveDialog.getByRole("button", { name: "Move here" }).click();
  await expect(moveDialog).toBeHidden();
  await expect(files).toHaveCount(0);
  await expect(page.locator("#files-note")).toHaveText("Moved report.txt to 2026.");
  await expect(sub).toContainText("1 file, 10 B");
  expect(await namesIn(page, subId)).toEqual(["report.txt"]);
  expect(await namesIn(page, projectsId)).toEqual([]);

  // Home by its breadcrumb; Back and Forward follow the folders.
  await crumbs.getByRole("link", { name: "Home" }).click();
  await expect(page).toHaveURL(`${stack.url}/files`);
  await expect(heading).toHaveText("Files");
  await expect(crumbs).toBeHidden();
  await page.goBack();
  await expect(page).toHaveURL(`${stack.url}/files?folder=${projectsId}`);
  await expect(heading).toHaveText("Projects");
  await expect(sub).toHaveCount(1);
  await page.goForward();
  await expect(page).toHaveURL(`${stack.url}/files`);
  await expect(files.filter({ hasText: "top.txt" })).toHaveCount(1);

  // Drag and drop: top.txt onto the Projects row.
  await dragUntil(files.filter({ hasText: "top.txt" }).locator(".name-cell"), projects, () => expect(files).toHaveCount(0, { timeout: 2_000 }));
  await expect(projects).toContainText("1 file, 11 B");
  expect(await namesIn(page, projectsId)).toEqual(["top.txt"]);
  expect(await namesIn(page, "root")).toEqual([]);

  // Opened by its address, a folder two deep has the whole path; a file dragged onto a breadcrumb moves there.
  // The one-page dashboard's address (`/?folder=`, still the Folder's `url`) becomes the Files section's.
  await page.goto(`${stack.url}/?folder=${subId}`);
  await expect(page).toHaveURL(`${stack.url}/files?folder=${subId}`);
  await expect(crumbs.getByRole("link")).toHaveText(["Home", "Projects", "2026"]);
  await expect(files.filter({ hasText: "report.txt" })).toHaveCount(1);
  await dragUntil(files.filter({ hasText: "report.txt" }).locator(".name-cell"), crumbs.getByRole("link", { name: "Projects" }), () => expect(files).toHaveCount(0, { timeout: 2_000 }));
  expect(await namesIn(page, projectsId)).toEqual(["report.txt", "top.txt"]);
  await crumbs.getByRole("link", { name: "Projects" }).click();
  await expect(page).toHaveURL(`${stack.url}/files?folder=${projectsId}`);
  await expect(files).toHaveCount(2);
  await dragUntil(files.filter({ hasText: "top.txt" }).locator(".name-cell"), crumbs.getByRole("link", { name: "Home" }), () => expect(files).toHaveCount(1, { timeout: 2_000 }));
  expect(await namesIn(page, "root")).toEqual(["top.txt"]);

  // Uploading a name the folder already holds: the file stays at the top, and the upload says so.
  await page.locator("#file-input").setInputFiles({ name: "report.txt", mimeType: "text/plain", buffer: Buffer.from("second\n") });
  await expect(page.locator("#uploads li").filter({ hasText: "report.txt" }).locator(".upload-status")).toHaveText(
    "uploaded, but left at the top: Projects already has a file of that name",
  );
  await expect(files).toHaveCount(1);
  expect(await namesIn(page, "root")).toEqual(["report.txt", "top.txt"]);

  // Rename the sub-folder: the row, and the API, have the new name; a clash is refused beside the field.
  await sub.getByRole("button", { name: "Rename folder 2026" }).click();
  await expect(nameDialog.getByLabel("Name")).toHaveValue("2026");
  await nameDialog.getByLabel("Name").fill("report.txt");
  await nameDialog.getByRole("button", { name: "Rename" }).click();
  await expect(nameDialog.getByLabel("Name")).toHaveAttribute("aria-invalid", "true");
  await nameDialog.getByLabel("Name").fill("Archive 2026");
  await nameDialog.getByRole("button", { name: "Rename" }).click();
  await expect(nameDialog).toBeHidden();
  const archive = folders.filter({ hasText: "Archive 2026" });
  await expect(archive).toHaveCount(1);
  await expect(archive.getByRole("button", { name: "Rename folder Archive 2026" })).toBeFocused();
  expect((await apiInPage<{ name: string }>(page, "GET", `/v1/folders/${subId}`)).body.name).toBe("Archive 2026");
  await shot(page, "folder");

  // Put a file two deep again, then delete Projects from Home: the question counts everything, and everything goes.
  await page.locator("#file-input").setInputFiles({ name: "plan.txt", mimeType: "text/plain", buffer: Buffer.from("plan\n") });
  await expect(files.filter({ hasText: "plan.txt" })).toHaveCount(1);
  await dragUntil(files.filter({ hasText: "plan.txt" }).locator(".name-cell"), archive, () => expect(archive).toContainText("1 file", { timeout: 2_000 }));
  const reportId = (await files.filter({ hasText: "report.txt" }).getAttribute("data-id"))!;
  await crumbs.getByRole("link", { name: "Home" }).click();
  await expect(projects).toContainText("1 file");
  let question = "";
  page.once("dialog", (d) => {
    question = d.message();
    void d.accept();
  });
  await projects.getByRole("button", { name: "Delete folder Projects" }).click();
  await expect(projects).toHaveCount(0);
  expect(question).toBe('Delete the folder "Projects", its 1 sub-folder and the 2 files in them? The files are deleted too; this cannot be undone.');
  await expect(page.getByRole("button", { name: "New folder" })).toBeFocused();
  expect((await apiInPage(page, "GET", `/v1/folders/${projectsId}`)).status).toBe(404);
  expect((await apiInPage(page, "GET", `/v1/folders/${subId}`)).status).toBe(404);
  expect((await apiInPage(page, "GET", `/v1/files/${reportId}`)).status).toBe(404);
  expect(await namesIn(page, "root")).toEqual(["report.txt", "top.txt"]);

  // The address of a folder that is gone shows the top, and says why.
  await page.goto(`${stack.url}/?folder=${projectsId}`);
  await expect(page.locator("#error")).toContainText("That folder does not exist");
  await expect(page).toHaveURL(`${stack.url}/files`);
  await expect(files).toHaveCount(2);

  // The refusals above (two name clashes, the upload's clash, the folder that is gone) are the browser's only complaints.
  expect(errors.filter((e) => !/status of (409|404) /.test(e))).toEqual([]);
  expect(foreign).toEqual([]);
});

test("on a phone a file moves by its Move to… dialog, and the folder list is cards", async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await signIn(page, stack, "bob");
  const made = await apiInPage<{ id: string }>(page, "POST", "/v1/folders", { name: "Receipts" });
  expect(made.status).toBe(200);
  await page.reload();
  await page.locator("#file-input").setInputFiles({ name: "receipt.pdf", mimeType: "application/pdf", buffer: Buffer.from("%PDF-1.4\n") });
  const row = page.locator("#files tbody tr").filter({ hasText: "receipt.pdf" });
  await expect(row).toHaveCount(1);
  const folder = page.locator("#folders tbody tr").filter({ hasText: "Receipts" });
  // A card: the name on its own line, the actions below it, inside the screen.
  const nameBox = (await folder.locator("td.name").boundingBox())!;
  const actionsBox = (await folder.locator("td.actions").boundingBox())!;
  expect(actionsBox.y).toBeGreaterThanOrEqual(nameBox.y + nameBox.height);
  expect(actionsBox.x + actionsBox.width).toBeLessThanOrEqual(390);
  await row.getByRole("button", { name: "Move to… receipt.pdf" }).click();
  const dialog = page.getByRole("dialog");
  await expect(dialog.getByRole("radio", { name: "Home (here)" })).toBeDisabled();
  await dialog.getByRole("radio", { name: "Receipts" }).check();
  await dialog.getByRole("button", { name: "Move here" }).click();
  await expect(row).toHaveCount(0);
  await expect(folder).toContainText("1 file");
  expect(await namesIn(page, made.body.id)).toEqual(["receipt.pdf"]);
  await shot(page, "phone");
});
