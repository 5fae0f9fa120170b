// Upload progress as people read it: sizes, dates, speed and time left, for the dashboard (app.js)
// and the guest upload page (upload.js). Pure functions and one small object, no DOM: the unit test
// (test/unit/progress.test.ts) imports this file as the browser does.

/** How far back the speed looks: long enough to smooth 8 MiB chunk boundaries, short enough to show a slowdown. */
export const SPEED_WINDOW_MS = 5000;
/** Below this much measured time the speed is a guess: none is shown yet. */
const MIN_SPAN_MS = 750;

/**
 * A size in bytes as binary units: "512 B", "1.5 KiB", "12 MiB" (one decimal below 10).
 * @param {number} bytes
 */
export function formatSize(bytes) {
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

/**
 * A duration for "… left": "8 s", "2 min 5 s", "1 h 3 min", rounded up to whole seconds.
 * @param {number} seconds
 */
export function formatDuration(seconds) {
  const s = Math.max(1, Math.ceil(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ""}`;
  const m = Math.floor(s / 60);
  return `${Math.floor(m / 60)} h${m % 60 ? ` ${m % 60} min` : ""}`;
}

/**
 * Speed over a sliding window of progress samples (bytes sent so far, as tus-js-client's and
 * XMLHttpRequest's progress events report them).
 * @param {() => number} now milliseconds, monotonic (performance.now in the browser; a fake clock in tests)
 */
export function createSpeedometer(now = () => performance.now(), windowMs = SPEED_WINDOW_MS) {
  /** @type {Array<[number, number]>} [time ms, bytes sent] oldest first */
  let samples = [];
  return {
    /**
     * Records `sent` bytes so far at this moment.
     * @returns {{ bytesPerSecond: number, secondsLeft: number } | null} null until the window
     *   spans MIN_SPAN_MS; secondsLeft is Infinity while nothing moves
     */
    update(sent, total) {
      const t = now();
      const last = samples[samples.length - 1];
      if (last && sent < last[1]) samples = []; // went back (a restarted upload): measure afresh
      samples.push([t, sent]);
      // Keep one sample at or before the window's start, so the window is always full once it can be.
      while (samples.length > 2 && samples[1][0] <= t - windowMs) samples.shift();
      const [t0, b0] = samples[0];
      if (t - t0 < MIN_SPAN_MS) return null;
      const bytesPerSecond = ((sent - b0) * 1000) / (t - t0);
      const secondsLeft = bytesPerSecond > 0 ? Math.max(0, total - sent) / bytesPerSecond : Infinity;
      return { bytesPerSecond, secondsLeft };
    },
    /** Forgets the samples: after a pause, the time paused is not slowness. */
    reset() {
      samples = [];
    },
  };
}

/**
 * The line under an upload's progress bar: "3.0 MiB of 10 MiB · 1.2 MiB/s · 6 s left", or
 * without speed while it is still being measured.
 * @param {{ bytesPerSecond: number, secondsLeft: number } | null} rate from {@link createSpeedometer}
 */
export function progressText(sent, total, rate) {
  const sizes = `${formatSize(sent)} of ${formatSize(total)}`;
  if (rate === null) return sizes;
  if (!Number.isFinite(rate.secondsLeft)) return `${sizes} · stalled`;
  const left = sent >= total ? "finishing…" : `${formatDuration(rate.secondsLeft)} left`;
  return `${sizes} · ${formatSize(Math.round(rate.bytesPerSecond))}/s · ${left}`;
}

/** Every date of the dashboard and the guest page: the browser's locale, medium date and short time ("5 Dec 2026, 07:24"). */
const DATE_FORMAT = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
/** The browser's time zone as the locale abbreviates it ("UTC", "CET", "GMT+2"): dateStyle cannot carry it. */
const ZONE_FORMAT = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" });

/**
 * An RFC 3339 time for people, by {@link DATE_FORMAT}; "" is "never". `zone` names the time
 * zone after it, where it matters: when something expires or a link stops working.
 */
export function formatTime(rfc3339, { zone = false } = {}) {
  if (!rfc3339) return "never";
  const at = new Date(rfc3339);
  if (!zone) return DATE_FORMAT.format(at);
  const name = ZONE_FORMAT.formatToParts(at).find((part) => part.type === "timeZoneName")?.value;
  return name ? `${DATE_FORMAT.format(at)} ${name}` : DATE_FORMAT.format(at);
}
