// A share page's "Downloads left", kept true without a reload (CONTRACT §15). The page itself
// counts nothing; each download, preview or ZIP does, here or on anyone else's screen. So after
// a Download is clicked or a preview opened, and whenever the page comes back into view (and
// every 30 s while it is seen), it asks the share's status (`?status=1`: JSON, counts nothing)
// and shows what is left; once nothing is, it says so and takes the downloads' links away.
const left = document.querySelector("[data-downloads-left]");
if (left !== null) {
  const statusUrl = `${location.pathname}?status=1`;
  let asking = false;

  /** Shows the link as used up: nothing left, the download links and previews gone. */
  const usedUp = () => {
    left.textContent = "None: this link is used up";
    for (const a of document.querySelectorAll("a[download], details.preview")) a.remove();
  };

  const refresh = async () => {
    if (asking) return;
    asking = true;
    try {
      const res = await fetch(statusUrl, { headers: { accept: "application/json" }, cache: "no-store", credentials: "same-origin" });
      if (res.status === 410) return usedUp();
      if (!res.ok) return;
      const status = await res.json();
      if (status.max_downloads === null) left.textContent = "No limit";
      else if (status.downloads_left === 0) usedUp();
      else left.textContent = `${status.downloads_left} of ${status.max_downloads}`;
    } catch {
      // Offline for a moment: the next look tries again.
    } finally {
      asking = false;
    }
  };

  // A download counts when its answer starts: ask a moment after, and again later for slow starts.
  const soon = () => {
    for (const ms of [700, 2000, 5000]) setTimeout(refresh, ms);
  };
  document.addEventListener("click", (e) => {
    if (e.target instanceof Element && e.target.closest("a[download]") !== null) soon();
  });
  document.addEventListener("toggle", (e) => {
    if (e.target instanceof HTMLDetailsElement && e.target.open) soon();
  }, true);
  // Media inside a preview count when played from the start.
  document.addEventListener("play", soon, true);
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) refresh();
  });
  setInterval(() => {
    if (!document.hidden) refresh();
  }, 30_000);
}
