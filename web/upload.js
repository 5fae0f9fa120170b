// The guest upload page (/u/{token}, CONTRACT §8): anyone with the link uploads files into its
// owner's account without signing in. Uploads go through tus (tus-js-client, loaded before this
// script as window.tus) with the link's token as the bearer credential, in 8 MiB chunks so that
// proxies capping request bodies pass them; an interrupted upload resumes from the server's
// offset (tus-js-client remembers the upload URL per file in localStorage).
"use strict";

(() => {
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

  function formatBytes(n) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) {
      n /= 1024;
      i++;
    }
    return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
  }

  function start(file) {
    const item = document.createElement("li");
    const name = document.createElement("span");
    name.textContent = file.name;
    const bar = document.createElement("progress");
    bar.max = Math.max(file.size, 1);
    bar.value = 0;
    const status = document.createElement("span");
    status.className = "muted";
    status.textContent = "starting…";
    item.append(name, bar, status);
    item.dataset.state = "uploading";
    list.append(item);

    const upload = new window.tus.Upload(file, {
      endpoint: "/v1/uploads",
      chunkSize: 8 * 1024 * 1024,
      retryDelays: [0, 1000, 3000, 5000, 10000],
      headers: { Authorization: `Bearer ${token}` },
      metadata: { filename: file.name, filetype: file.type },
      removeFingerprintOnSuccess: true,
      onProgress(sent, total) {
        bar.max = Math.max(total, 1);
        bar.value = sent;
        status.textContent = `${formatBytes(sent)} of ${formatBytes(total)}`;
      },
      onSuccess() {
        bar.value = bar.max;
        status.textContent = "uploaded";
        item.dataset.state = "done";
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
})();
