// Sizes as people write them, for the dashboard's quota field (CONTRACT §15: "Sizes are accepted as
// bytes or with units (5G, 500MiB) in the CLI and the dashboard"). The same rule as the CLI's
// (src/domain/size.ts parseSize); test/unit/web-size.test.ts checks the two agree. No DOM: the test
// imports this file as the browser does.

/** Multipliers by lower-cased unit: K, M, G, T and KiB … TiB binary; KB … TB decimal. */
const UNITS = {
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
 * Whole bytes (`5368709120`) or a number with a unit, case-insensitive, an optional space
 * between (`5G`, `500 MiB`, `2TB`, `1.5G`: a fraction rounded down to whole bytes).
 * @param {string} text
 * @returns {number | undefined} the bytes, or undefined when `text` is not such a size
 */
export function parseSize(text) {
  const m = /^(\d{1,16}(?:\.\d{1,6})?) ?([a-z]{0,3})$/i.exec(text.trim());
  if (m === null) return undefined;
  const unit = UNITS[m[2].toLowerCase()];
  if (unit === undefined || (unit === 1 && m[1].includes("."))) return undefined;
  const bytes = Math.floor(Number(m[1]) * unit);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

/**
 * `bytes` written so that {@link parseSize} reads it back exactly: the largest binary unit that
 * divides it (`5 GiB`, `500 MiB`), else bytes (`1234 B`).
 * @param {number} bytes
 */
export function exactSize(bytes) {
  for (const [unit, factor] of [["TiB", 1024 ** 4], ["GiB", 1024 ** 3], ["MiB", 1024 ** 2], ["KiB", 1024]]) {
    if (bytes >= factor && bytes % factor === 0) return `${bytes / factor} ${unit}`;
  }
  return `${bytes} B`;
}
