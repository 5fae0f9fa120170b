/**
 * Dates on the pages cubby renders for people who are not signed in (a share's page): written
 * as the dashboard writes them (web/app.js formatTime: medium date, short time) in the language
 * the browser asks for (`Accept-Language`), in UTC, which the text names, since the server does
 * not know the reader's time zone. The exact instant is in `<time datetime>` for anything that
 * reads it. A page that runs no script (a share without a download limit) stays so.
 */
import { formatTimestamp } from "../domain/time.ts";
import { escapeHtml } from "./pages.ts";

/** The language of a page's dates when the request asks for none this runtime formats. */
const FALLBACK_LOCALE = "en-GB";

/**
 * The first language of an `Accept-Language` header (RFC 9110 §12.5.4) that Intl can format
 * dates in, ignoring `q` weights beyond their order; {@link FALLBACK_LOCALE} otherwise.
 */
export function pageLocale(acceptLanguage: string | null): string {
  for (const part of (acceptLanguage ?? "").split(",").slice(0, 8)) {
    const tag = part.split(";")[0]!.trim();
    if (tag === "" || tag === "*") continue;
    try {
      const [supported] = Intl.DateTimeFormat.supportedLocalesOf([tag]);
      if (supported !== undefined) return supported;
    } catch {
      // not a language tag (RangeError): the next one
    }
  }
  return FALLBACK_LOCALE;
}

/**
 * An instant as HTML: `<time datetime="2026-11-26T13:20:00Z">26 Nov 2026, 13:20 UTC</time>`
 * and, with `nowMicros`, how far ahead it is (" (in 3 days)").
 */
export function timeHtml(atMicros: number, locale: string, nowMicros?: number): string {
  const text = new Intl.DateTimeFormat(locale, { dateStyle: "medium", timeStyle: "short", timeZone: "UTC" }).format(new Date(atMicros / 1000));
  const ahead = nowMicros === undefined ? "" : ` (${relative(atMicros - nowMicros)})`;
  return `<time datetime="${formatTimestamp(atMicros)}">${escapeHtml(text)} UTC</time>${ahead}`;
}

function relative(deltaMicros: number): string {
  const minutes = Math.round(deltaMicros / 60_000_000);
  if (minutes < 1) return "in less than a minute";
  if (minutes < 90) return `in ${minutes} minute${minutes === 1 ? "" : "s"}`;
  const hours = Math.round(minutes / 60);
  if (hours < 36) return `in ${hours} hours`;
  return `in ${Math.round(hours / 24)} days`;
}
