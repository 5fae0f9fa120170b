// The guest upload page (/u/{token}, CONTRACT §8): anyone with the link uploads files into its
// owner's account without signing in. Uploads go through tus (tus-js-client, loaded before this
// script as window.tus) with the link's token as the bearer credential, with the dashboard's
// settings (tus-options.js: 8 MiB requests so that proxies capping request bodies pass them, a
// large file as several partial uploads side by side); an interrupted upload resumes from the
// server's offsets (tus-js-client remembers the upload URLs per file in localStorage). Each upload shows
// its speed and time left; the link's limits above (rendered by the server) count down as files
// go, and a file the link cannot take is refused before a byte is sent (CONTRACT §15).
import { createSpeedometer, formatSize, progressText } from "/assets/progress.js";
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

// The expiry in the guest's own time zone (the server wrote it in UTC), as the dashboard writes
// an expiry (web/app.js formatTime): medium date, short time, the zone named.
for (const time of document.querySelectorAll(".limits time")) {
  const at = new Date(time.dateTime);
  const zone = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" }).formatToParts(at).find((part) => part.type === "timeZoneName")?.value;
  const text = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" }).format(at);
  time.textContent = zone ? `${text} ${zone}` : text;
}

/** What the link still takes, as the page shows it: files left (null: no limit) and the largest file, in bytes. */
function limits() {
  const files = document.getElementById("files-left");
  const largest = document.getElementById("largest");
  return { files: files ? Number(files.dataset.left) : null, bytes: largest ? Number(largest.dataset.bytes) : Infinity };
}

/**
 * Takes a file's place and bytes from what the page shows the link still takes, once it is on
 * its way (given back if it fails), so the next file is checked against what is left.
 */
function hold(file, sign) {
  const files = document.getElementById("files-left");
  if (files) {
    const n = Math.max(0, Number(files.dataset.left) - sign);
    files.dataset.left = String(n);
    files.textContent = String(n);
  }
  // Without a limit in all (data-shared), each file may be as large as the largest: nothing to count down.
  const largest = document.getElementById("largest");
  if (largest && largest.dataset.shared === "true") {
    const n = Math.max(0, Number(largest.dataset.bytes) - sign * file.size);
    largest.dataset.bytes = String(n);
    largest.textContent = formatSize(n);
  }
}

/** Why the link cannot take `file` now, in words; undefined when it can (CONTRACT §15: refused before a byte is sent). */
function refusal(file) {
  const left = limits();
  if (left.files === 0) return "This link takes no more files.";
  if (file.size > left.bytes) return `This file is ${formatSize(file.size)}; this link takes files of at most ${formatSize(left.bytes)} now.`;
  return undefined;
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
  const refused = refusal(file);
  if (refused !== undefined) {
    bar.remove();
    status.textContent = `not sent: ${refused}`;
    item.dataset.state = "refused";
    return;
  }
  hold(file, 1);
  const speed = createSpeedometer();
  // The parts of a large file say which file they are part of and its size, so the server
  // refuses a file the link cannot take at its first part (Upload-Metadata group and total).
  // getRandomValues, not randomUUID: a LAN address over plain HTTP is not a secure context.
  const group = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");

  const upload = new window.tus.Upload(file, {
    endpoint: "/v1/uploads",
    ...tusOptions(file.size),
    // No waiting state here that resumes by itself (the dashboard's): retry for longer instead.
    retryDelays: [0, 1000, 3000, 5000, 10000],
    headers: { Authorization: `Bearer ${token}` },
    metadata: { filename: file.name, filetype: file.type },
    metadataForPartialUploads: { filename: file.name, group, total: String(file.size) },
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
    },
    onError(err) {
      status.textContent = `failed: ${messageOf(err)}`;
      item.dataset.state = "failed";
      hold(file, -1);
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
