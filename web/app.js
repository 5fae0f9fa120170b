// cubby's dashboard: plain JavaScript against the same REST API scripts use, authenticated by
// the session cookie (same-origin requests only). No framework, no build step, no CDN.

const $ = (id) => document.getElementById(id);
const PAGE_SIZE = 50;
let nextPageToken = "";

/** Shows an error from a google.rpc.Status body (or any Error) in the alert line. */
function showError(err) {
  const box = $("error");
  box.textContent = err instanceof Error ? err.message : String(err);
  box.hidden = false;
}

function clearError() {
  $("error").hidden = true;
}

/** fetch() that throws an Error carrying the API's message on any non-2xx answer. */
async function api(path, init = {}) {
  const res = await fetch(path, { credentials: "same-origin", ...init });
  const text = await res.text();
  const body = text === "" ? null : JSON.parse(text);
  if (!res.ok) throw new Error(body?.message ? `${body.message} (HTTP ${res.status})` : `HTTP ${res.status}`);
  return body;
}

function formatSize(bytes) {
  const n = Number(bytes);
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

function formatTime(rfc3339) {
  return rfc3339 ? new Date(rfc3339).toLocaleString() : "never";
}

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  Object.assign(node, props);
  for (const c of children) node.append(c);
  return node;
}

async function copy(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    button.textContent = "Press Ctrl+C";
  }
  setTimeout(() => (button.textContent = "Copy"), 1500);
}

// --- files ---

function fileRow(file) {
  const label = file.name || file.id;
  const visibility = el("select", { "aria-label": `Visibility of ${label}` });
  for (const v of ["private", "internal", "public"]) visibility.append(el("option", { value: v, textContent: v, selected: v === file.visibility }));
  visibility.setAttribute("aria-label", `Visibility of ${label}`);
  visibility.addEventListener("change", async () => {
    clearError();
    try {
      replaceRow(file.id, await patchFile(file.id, { visibility: visibility.value }));
    } catch (err) {
      visibility.value = file.visibility;
      showError(err);
    }
  });

  const slug = el("input", { value: file.slug, placeholder: "none", maxLength: 128, size: 14 });
  slug.setAttribute("aria-label", `Slug of ${label}`);
  const saveSlug = el("button", { type: "button", textContent: "Set" });
  saveSlug.setAttribute("aria-label", `Set slug of ${label}`);
  saveSlug.addEventListener("click", async () => {
    clearError();
    try {
      replaceRow(file.id, await patchFile(file.id, { slug: slug.value.trim() }));
    } catch (err) {
      showError(err);
    }
  });
  slug.addEventListener("keydown", (e) => e.key === "Enter" && saveSlug.click());

  const copyLink = el("button", { type: "button", textContent: "Copy link" });
  copyLink.setAttribute("aria-label", `Copy link of ${label}`);
  copyLink.addEventListener("click", () => copy(file.url, copyLink));

  const del = el("button", { type: "button", textContent: "Delete", className: "danger" });
  del.setAttribute("aria-label", `Delete ${label}`);
  del.addEventListener("click", async () => {
    if (!confirm(`Delete ${label}? This cannot be undone.`)) return;
    clearError();
    try {
      await api(`/v1/files/${file.id}`, { method: "DELETE" });
      document.querySelector(`tr[data-id="${file.id}"]`)?.remove();
      $("files-empty").hidden = $("files").tBodies[0].rows.length > 0;
    } catch (err) {
      showError(err);
    }
  });

  const open = el("a", { href: file.url, textContent: label, target: "_blank", rel: "noopener" });
  const row = el(
    "tr",
    {},
    el("td", {}, open, el("div", { className: "muted", textContent: file.content_type })),
    el("td", { textContent: formatSize(file.size) }),
    el("td", {}, visibility),
    el("td", {}, el("div", { className: "inline" }, slug, saveSlug)),
    el("td", {}, el("div", { className: "inline" }, copyLink, del)),
  );
  row.dataset.id = file.id;
  return row;
}

function replaceRow(id, file) {
  document.querySelector(`tr[data-id="${id}"]`)?.replaceWith(fileRow(file));
}

function patchFile(id, changes) {
  return api(`/v1/files/${id}`, { method: "PATCH", headers: { "content-type": "application/json" }, body: JSON.stringify(changes) });
}

async function loadFiles(append) {
  const query = new URLSearchParams({ page_size: String(PAGE_SIZE) });
  if (append && nextPageToken) query.set("page_token", nextPageToken);
  const page = await api(`/v1/files?${query}`);
  const body = $("files").tBodies[0];
  if (!append) body.replaceChildren();
  for (const f of page.files) body.append(fileRow(f));
  nextPageToken = page.next_page_token;
  $("files-more").hidden = nextPageToken === "";
  $("files-empty").hidden = body.rows.length > 0;
}

/** Uploads one file with a progress bar (XMLHttpRequest reports upload progress; fetch does not). */
function upload(file) {
  const bar = el("progress", { max: 100, value: 0 });
  bar.setAttribute("aria-label", `Uploading ${file.name}`);
  const item = el("li", {}, el("span", { textContent: file.name }), bar);
  $("uploads").append(item);
  const query = new URLSearchParams({ name: file.name, visibility: $("upload-visibility").value });
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `/v1/files?${query}`);
    xhr.setRequestHeader("content-type", file.type || "application/octet-stream");
    xhr.upload.addEventListener("progress", (e) => {
      if (e.lengthComputable) bar.value = Math.round((e.loaded / e.total) * 100);
    });
    xhr.addEventListener("load", () => {
      if (xhr.status === 200) {
        bar.value = 100;
        item.classList.add("done");
        const created = JSON.parse(xhr.responseText);
        $("files").tBodies[0].prepend(fileRow(created));
        $("files-empty").hidden = true;
        setTimeout(() => item.remove(), 2000);
      } else {
        let message = `HTTP ${xhr.status}`;
        try {
          message = `${JSON.parse(xhr.responseText).message} (HTTP ${xhr.status})`;
        } catch {}
        item.remove();
        showError(new Error(`${file.name}: ${message}`));
      }
      resolve();
    });
    xhr.addEventListener("error", () => {
      item.remove();
      showError(new Error(`${file.name}: the upload was interrupted`));
      resolve();
    });
    xhr.send(file);
  });
}

async function uploadAll(files) {
  clearError();
  for (const f of files) await upload(f);
}

// --- keys ---

function keyRow(key) {
  const label = key.name || key.id;
  const revoke = el("button", { type: "button", textContent: "Revoke", className: "danger" });
  revoke.setAttribute("aria-label", `Revoke key ${label}`);
  revoke.addEventListener("click", async () => {
    if (!confirm(`Revoke the key "${label}"? Programs using it will stop working.`)) return;
    clearError();
    try {
      await api(`/auth/keys/${key.id}`, { method: "DELETE" });
      if ($("new-key").dataset.id === key.id) $("new-key").hidden = true;
      await loadKeys();
    } catch (err) {
      showError(err);
    }
  });
  return el(
    "tr",
    {},
    el("td", { textContent: label }),
    el("td", { textContent: formatTime(key.created_at) }),
    el("td", { textContent: formatTime(key.last_used_at) }),
    el("td", {}, revoke),
  );
}

async function loadKeys() {
  const { keys } = await api("/auth/keys");
  $("keys").tBodies[0].replaceChildren(...keys.map(keyRow));
  $("keys-empty").hidden = keys.length > 0;
}

// --- start ---

async function main() {
  $("redirect-uri").textContent = `${location.origin}/auth/idp/callback`;
  let session;
  try {
    session = await api("/auth/session");
  } catch (err) {
    $("loading").hidden = true;
    showError(err);
    return;
  }
  $("loading").hidden = true;
  if (!session.signed_in) {
    $(session.sign_in_configured ? "signed-out" : "not-configured").hidden = false;
    return;
  }
  $("account").hidden = false;
  $("account-email").textContent = session.email;
  $("signed-in").hidden = false;

  $("sign-out").addEventListener("click", async () => {
    try {
      await api("/auth/logout", { method: "POST" });
      location.assign("/");
    } catch (err) {
      showError(err);
    }
  });
  $("file-input").addEventListener("change", async (e) => {
    await uploadAll([...e.target.files]);
    e.target.value = "";
  });
  const drop = $("drop");
  drop.addEventListener("dragover", (e) => {
    e.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    uploadAll([...e.dataTransfer.files]);
  });
  $("files-more").addEventListener("click", () => loadFiles(true).catch(showError));
  $("key-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    clearError();
    try {
      const minted = await api("/auth/keys", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: $("key-name").value }),
      });
      $("new-key-value").value = minted.key;
      $("new-key").dataset.id = minted.id;
      $("new-key").hidden = false;
      $("key-name").value = "";
      await loadKeys();
    } catch (err) {
      showError(err);
    }
  });
  $("new-key-copy").addEventListener("click", (e) => copy($("new-key-value").value, e.target));

  await Promise.all([loadFiles(false), loadKeys()]).catch(showError);
}

main();
