// The guest upload page (/u/{token}, CONTRACT §8): anyone with the link uploads files into its
// owner's account without signing in. Uploads go through tus (tus-js-client, loaded before this
// script as window.tus) with the link's token as the bearer credential, with the dashboard's
// settings (tus-options.js: 8 MiB requests so that proxies capping request bodies pass them, a
// large file as several partial uploads side by side); an interrupted upload resumes from the
// server's offsets (tus-js-client remembers the upload URLs per file in localStorage). Each upload shows
// its speed and time left; the link's limits above (rendered by the server) count down.
import { createSpeedometer, progressText } from "/assets/progress.js";
import { tusOptions } from "/assets/tus-options.js";

const token = location.pathname.split("/")[2] ?? "";
const list = document.getElementById("uploads");
const input = document.getElementById("file-input");
const drop = document.getElementById("drop");
const errorBox = document.getElementById("error");

/** The contract's error message from a failed tus request, or the error's own. */
function messageOf(err) {
  const body = err && err.originalResponse ? err.originalResponse.getBody() : "";
  try {
    const parsed = JSON.parse(body);
    if (parsed && typeof parsed.message === "string") return parsed.message;
  } catch {
    // not JSON: fall through
  }
  return err && err.message ? String(err.message).split("\n")[0] : "upload failed";
}

// The expiry in the guest's own time zone (the server wrote it in UTC).
for (const time of document.querySelectorAll(".limits time")) {
  time.textContent = new Date(time.dateTime).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** One file fewer left on the link, once one has arrived. */
function countDown() {
  const left = document.getElementById("files-left");
  if (!left) return;
  const n = Math.max(0, Number(left.dataset.left) - 1);
  left.dataset.left = String(n);
  left.textContent = String(n);
}

function start(file) {
  const item = document.createElement("li");
  const name = document.createElement("span");
  name.className = "upload-name";
  name.textContent = file.name;
  const bar = document.createElement("progress");
  bar.max = Math.max(file.size, 1);
  bar.value = 0;
  bar.setAttribute("aria-label", `Uploading ${file.name}`);
  const status = document.createElement("span");
  status.className = "muted upload-status";
  status.textContent = "starting…";
  item.append(name, bar, status);
  item.dataset.state = "uploading";
  list.append(item);
  const speed = createSpeedometer();

  const upload = new window.tus.Upload(file, {
    endpoint: "/v1/uploads",
    ...tusOptions(file.size),
    // No waiting state here that resumes by itself (the dashboard's): retry for longer instead.
    retryDelays: [0, 1000, 3000, 5000, 10000],
    headers: { Authorization: `Bearer ${token}` },
    metadata: { filename: file.name, filetype: file.type },
    removeFingerprintOnSuccess: true,
    onProgress(sent, total) {
      bar.max = Math.max(total, 1);
      bar.value = sent;
      status.textContent = progressText(sent, total, speed.update(sent, total));
    },
    onSuccess() {
      bar.value = bar.max;
      status.textContent = "uploaded";
      item.dataset.state = "done";
      countDown();
    },
    onError(err) {
      status.textContent = `failed: ${messageOf(err)}`;
      item.dataset.state = "failed";
    },
  });
  upload
    .findPreviousUploads()
    .then((previous) => {
      if (previous.length > 0) upload.resumeFromPreviousUpload(previous[0]);
      upload.start();
    })
    .catch((err) => {
      errorBox.textContent = messageOf(err);
      errorBox.hidden = false;
    });
}

input.addEventListener("change", () => {
  for (const file of input.files) start(file);
  input.value = "";
});
drop.addEventListener("dragover", (e) => {
  e.preventDefault();
  drop.classList.add("over");
});
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => {
  e.preventDefault();
  drop.classList.remove("over");
  for (const file of e.dataTransfer.files) start(file);
});
