// Upload speed and time left (web/progress.js), with a fake clock: the sliding window, a
// restarted upload, a stall, and the text under a progress bar.
import { expect, test } from "bun:test";
// @ts-ignore: a browser module in plain JavaScript (web/ is not type-checked).
import { createSpeedometer, formatDuration, formatTime, progressText } from "../../web/progress.js";

type Rate = { bytesPerSecond: number; secondsLeft: number } | null;
const MiB = 1024 * 1024;

function clocked() {
  let t = 0;
  const meter = createSpeedometer(() => t, 5000) as { update(sent: number, total: number): Rate; reset(): void };
  return { meter, at: (ms: number) => (t = ms) };
}

test("no speed before 750 ms of samples; then bytes over the window and the time left", () => {
  const { meter, at } = clocked();
  at(0);
  expect(meter.update(0, 100 * MiB)).toBeNull();
  at(500);
  expect(meter.update(MiB, 100 * MiB)).toBeNull();
  at(1000);
  expect(meter.update(2 * MiB, 100 * MiB)).toEqual({ bytesPerSecond: 2 * MiB, secondsLeft: 49 });
});

test("the window slides: an early burst stops counting after 5 s", () => {
  const { meter, at } = clocked();
  at(0);
  meter.update(0, 100 * MiB);
  at(1000);
  meter.update(50 * MiB, 100 * MiB); // 50 MiB in the first second
  for (let s = 2; s <= 7; s++) {
    at(s * 1000);
    meter.update(50 * MiB + (s - 1) * MiB, 100 * MiB); // then 1 MiB/s
  }
  at(8000);
  const rate = meter.update(57 * MiB, 100 * MiB);
  expect(rate?.bytesPerSecond).toBe(MiB);
  expect(rate?.secondsLeft).toBe(43);
});

test("an upload that starts again from fewer bytes is measured afresh; reset forgets a pause", () => {
  const { meter, at } = clocked();
  at(0);
  meter.update(10 * MiB, 20 * MiB);
  at(1000);
  meter.update(12 * MiB, 20 * MiB);
  at(1100);
  expect(meter.update(MiB, 20 * MiB)).toBeNull();
  meter.reset();
  at(60_000);
  expect(meter.update(2 * MiB, 20 * MiB)).toBeNull();
});

test("nothing moving is a stall, not an endless time left", () => {
  const { meter, at } = clocked();
  at(0);
  meter.update(MiB, 2 * MiB);
  at(6000);
  const rate = meter.update(MiB, 2 * MiB);
  expect(rate?.secondsLeft).toBe(Infinity);
  expect(progressText(MiB, 2 * MiB, rate)).toBe("1.0 MiB of 2.0 MiB · stalled");
});

test("the line under a progress bar", () => {
  expect(progressText(3 * MiB, 10 * MiB, null)).toBe("3.0 MiB of 10 MiB");
  expect(progressText(3 * MiB, 10 * MiB, { bytesPerSecond: 12.3 * 1024 * 1024, secondsLeft: 7.2 })).toBe("3.0 MiB of 10 MiB · 12 MiB/s · 8 s left");
  expect(progressText(10 * MiB, 10 * MiB, { bytesPerSecond: MiB, secondsLeft: 0 })).toBe("10 MiB of 10 MiB · 1.0 MiB/s · finishing…");
  expect([formatDuration(0.2), formatDuration(59), formatDuration(125), formatDuration(3600), formatDuration(3 * 3600 + 61)]).toEqual(["1 s", "59 s", "2 min 5 s", "1 h", "3 h 1 min"]);
});

test("formatTime: one date format for the dashboard and the guest page; \"\" is never; the zone named when asked", () => {
  expect(formatTime("")).toBe("never");
  const at = "2026-12-05T07:24:00Z";
  const plain = formatTime(at);
  expect(plain).toBe(new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" }).format(new Date(at)));
  expect(formatTime(at, { zone: true })).toStartWith(`${plain} `);
});
