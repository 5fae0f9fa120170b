/**
 * A size in bytes as people read it on cubby's pages, the same as the dashboard shows it
 * (web/progress.js `formatSize`): binary units, one decimal below 10 — "512 B", "1.5 KiB",
 * "12 MiB".
 */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}
