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

/** Multipliers of the units {@link parseSize} takes, by lower-cased unit. */
const SIZE_UNITS: Record<string, number> = {
  "": 1,
  b: 1,
  k: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gib: 1024 ** 3,
  t: 1024 ** 4,
  tib: 1024 ** 4,
  kb: 1000,
  mb: 1000 ** 2,
  gb: 1000 ** 3,
  tb: 1000 ** 4,
};

/**
 * A size as people write it (CONTRACT §15, §17): whole bytes (`5368709120`), or a number with a
 * unit, case-insensitive, an optional space between: `K`, `M`, `G`, `T` and `KiB`, `MiB`, `GiB`,
 * `TiB` are binary (powers of 1024, as `dd`, `du -h` and cubby's own pages count); `KB`, `MB`,
 * `GB`, `TB` decimal (powers of 1000, as disk makers count). A fraction is allowed with a unit
 * (`1.5G`) and rounded down to whole bytes.
 * @returns the bytes (a safe integer), or undefined when `text` is not such a size
 */
export function parseSize(text: string): number | undefined {
  const m = /^(\d{1,16}(?:\.\d{1,6})?) ?([a-z]{0,3})$/i.exec(text.trim());
  if (m === null) return undefined;
  const unit = SIZE_UNITS[m[2]!.toLowerCase()];
  if (unit === undefined || (unit === 1 && m[1]!.includes("."))) return undefined;
  const bytes = Math.floor(Number(m[1]) * unit);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}
