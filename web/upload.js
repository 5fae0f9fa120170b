// The guest upload page (/u/{token}, CONTRACT §8): anyone with the link uploads files into its
// owner's account without signing in. Uploads go through tus (tus-js-client, loaded before this
// script as window.tus) with the link's token as the bearer credential, with the dashboard's
// settings (tus-options.js: 8 MiB requests so that proxies capping request bodies pass them, a
// large file as several partial uploads side by side); an interrupted upload resumes from the
// server's offsets (tus-js-client remembers the upload URLs per file in localStorage). Each upload shows
// its speed and time left; the link's limits above (rendered by the server) count down as files
// go, and a file the link cannot take is refused before a byte is sent (CONTRACT §15). After each
// upload, and when the server refuses one (another guest used the link meanwhile), the limits are
// read again from the server (this page, fetched anew), and a refusal is said in words with sizes
// in units, never the server's message for programs.
import { createSpeedometer, formatSize, formatTime, progressText } from "/assets/progress.js";
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

/** "the upload expired; start a new one" → "The upload expired; start a new one." */
function sentence(message) {
  const s = message.charAt(0).toUpperCase() + message.slice(1);
  return /[.!?]$/.test(s) ? s : `${s}.`;
}

/** The HTTP status of a failed tus request, or 0 when no answer came (the network). */
function statusOf(err) {
  return err && err.originalResponse ? err.originalResponse.getStatus() : 0;
}

// The expiry in the guest's own time zone (the server wrote it in UTC), as the dashboard writes
// an expiry (progress.js formatTime): medium date, short time, the zone named.
for (const time of document.querySelectorAll(".limits time")) time.textContent = formatTime(time.dateTime, { zone: true });

/**
 * What the link takes as the server last said (files left, null: no limit; the largest file's
 * bytes; whether the files share those bytes, the link's max_bytes), and what this page's uploads
 * on their way hold of it. The page shows the difference.
 */
const server = readLimits(document);
const held = { files: 0, bytes: 0 };

/** The limits a page of this link states (this one, or one fetched anew). */
function readLimits(doc) {
  const files = doc.getElementById("files-left");
  const largest = doc.getElementById("largest");
  return {
    files: files ? Number(files.dataset.left) : null,
    bytes: largest ? Number(largest.dataset.bytes) : Infinity,
    shared: largest ? largest.dataset.shared === "true" : false,
  };
}

/** What the link still takes now: files left (null: no limit) and the largest file, in bytes. */
function limits() {
  return {
    files: server.files === null ? null : Math.max(0, server.files - held.files),
    // Without a limit in all (data-shared), each file may be as large as the largest: nothing is held.
    bytes: server.shared ? Math.max(0, server.bytes - held.bytes) : server.bytes,
  };
}

/** Writes {@link limits} into the page. */
function showLimits() {
  const left = limits();
  const files = document.getElementById("files-left");
  if (files && left.files !== null) {
    files.dataset.left = String(left.files);
    files.textContent = String(left.files);
  }
  const largest = document.getElementById("largest");
  if (largest && Number.isFinite(left.bytes)) {
    largest.dataset.bytes = String(left.bytes);
    largest.textContent = formatSize(left.bytes);
  }
}

/**
 * Takes a file's place and bytes from what the page shows the link still takes, once it is on
 * its way (`sign` 1), or gives them back (-1), so the next file is checked against what is left.
 */
function hold(file, sign) {
  held.files += sign;
  held.bytes += sign * file.size;
  showLimits();
}

/**
 * Reads the link's limits from the server again (its page, fetched anew), then lets `settle` give
 * back what an upload held, and shows the result; both at once, so the page never counts a file
 * twice or not at all. On a network failure the server's last word stands, less what `settle`
 * says the server took meanwhile.
 * @param {() => { files: number, bytes: number }} settle gives back holds; returns what the server took meanwhile, if it could not be asked
 * @returns {Promise<boolean>} false when the link no longer takes uploads (its page answers an error)
 */
async function refreshLimits(settle) {
  let fresh;
  let open = true;
  try {
    const res = await fetch(location.href, { headers: { accept: "text/html" }, cache: "no-store" });
    if (res.ok) fresh = readLimits(new DOMParser().parseFromString(await res.text(), "text/html"));
    else open = false;
  } catch {
    // Offline for a moment: keep what the page knew.
  }
  const took = settle();
  if (fresh !== undefined) Object.assign(server, fresh);
  else {
    if (server.files !== null) server.files = Math.max(0, server.files - took.files);
    if (server.shared) server.bytes = Math.max(0, server.bytes - took.bytes);
  }
  if (!open) Object.assign(server, { files: 0, bytes: 0, shared: true });
  showLimits();
  return open;
}

/** Why the link cannot take `file` now, in words; undefined when it can (CONTRACT §15: refused before a byte is sent). */
function refusal(file) {
  const left = limits();
  if (left.files === 0) return "This link takes no more files.";
  if (file.size > left.bytes) return `This file is ${formatSize(file.size)}; this link takes files of at most ${formatSize(left.bytes)} now.`;
  return undefined;
}

/**
 * Why the server refused `file` (413 or 410: the link's limits, which others' uploads may have
 * used meanwhile), in words with sizes in units, from the limits read again after the refusal.
 */
function serverRefusal(file, open) {
  const left = limits();
  if (!open) return "This link no longer takes uploads.";
  if (left.files === 0) return "This link takes no more files now: other uploads took its last place.";
  if (file.size > left.bytes) {
    if (!server.shared) return `This file is ${formatSize(file.size)}; this link takes files of at most ${formatSize(left.bytes)}.`;
    return `This file is ${formatSize(file.size)}, but this link has only ${formatSize(left.bytes)} left now: other uploads used the rest.`;
  }
  // What the page shows fits: other guests' uploads still on their way hold the rest, or the
  // owner's storage is full; either may change.
  return "This link cannot take this file now: uploads still on their way hold the room it needs, or its owner's storage is full. Try again later.";
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
      // The server counts the file now: its limits replace this upload's hold.
      void refreshLimits(() => {
        hold(file, -1);
        return { files: 1, bytes: file.size };
      });
    },
    onError(err) {
      const refusedByServer = [410, 413].includes(statusOf(err));
      if (!refusedByServer) {
        status.textContent = `failed: ${sentence(messageOf(err))}`;
        item.dataset.state = "failed";
        hold(file, -1);
        return;
      }
      // The link's limits changed since the page was read (another guest's upload): read them
      // again, and say what they are now.
      status.textContent = "refused: checking what this link takes now…";
      void refreshLimits(() => {
        hold(file, -1);
        return { files: 0, bytes: 0 };
      }).then((open) => {
        bar.remove();
        status.textContent = `not uploaded: ${serverRefusal(file, open)}`;
        item.dataset.state = "refused";
      });
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
