// The ShareX custom uploader the dashboard offers for a new key (web/sharex.js, CONTRACT §15):
// every field ShareX reads, in its own names and syntax. test/e2e/installable.e2e.ts downloads
// it from the dashboard and uploads with it as ShareX would.
import { expect, test } from "bun:test";
// @ts-ignore: a browser module in plain JavaScript (web/ is not type-checked).
import { SHAREX_VERSION, sharexUploader } from "../../web/sharex.js";

test("a raw-body POST /v1/files named by {filename}, with the key, answering the File's url", () => {
  expect(sharexUploader({ origin: "https://files.example.com:8443", key: "cubby_KEY", visibility: "public" })).toEqual({
    Version: SHAREX_VERSION,
    Name: "cubby (files.example.com:8443)",
    DestinationType: "ImageUploader, TextUploader, FileUploader",
    RequestMethod: "POST",
    RequestURL: "https://files.example.com:8443/v1/files",
    Parameters: { name: "{filename}", visibility: "public" },
    Headers: { Authorization: "Bearer cubby_KEY" },
    Body: "Binary",
    URL: "{json:url}",
    ErrorMessage: "{json:message}",
  });
});

test("a version past 13.7.1, the last whose files ShareX rewrites from the $…$ syntax", () => {
  const [major, minor] = (SHAREX_VERSION as string).split(".").map(Number) as [number, number];
  expect(major > 13 || (major === 13 && minor > 7)).toBe(true);
});
