// The dates of share pages (src/serving/page-time.ts): the reader's language from
// Accept-Language, always in UTC and saying so, the instant in <time datetime>.
import { expect, test } from "bun:test";
import { pageLocale, timeHtml } from "../../src/serving/page-time.ts";

const AT = Date.UTC(2026, 10, 26, 13, 20) * 1000; // microseconds

test("the first language of Accept-Language that Intl formats, else en-GB", () => {
  expect(
    [null, "", "*", "de-DE,de;q=0.9,en;q=0.8", "en-US", "not a tag!, fr;q=0.5", "x-klingon-only"].map(pageLocale),
  ).toEqual(["en-GB", "en-GB", "en-GB", "de-DE", "en-US", "fr", "en-GB"]);
});

test("an instant: medium date and short time in the reader's language, UTC named, how far ahead", () => {
  expect(timeHtml(AT, "en-GB", AT - 3 * 86_400_000_000)).toBe('<time datetime="2026-11-26T13:20:00Z">26 Nov 2026, 13:20 UTC</time> (in 3 days)');
  // ICU versions differ in the space before PM (U+202F or U+0020).
  expect(timeHtml(AT, "en-US").replace(/\s/g, " ")).toBe('<time datetime="2026-11-26T13:20:00Z">Nov 26, 2026, 1:20 PM UTC</time>');
  expect(timeHtml(AT, "de-DE")).toBe('<time datetime="2026-11-26T13:20:00Z">26.11.2026, 13:20 UTC</time>');
});
