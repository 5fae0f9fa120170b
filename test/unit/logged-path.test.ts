// What logs and error reports print of a path (serving/logged-path.ts): a login link's token in
// none of the spellings that reach the link (issue 37), every other path as sent.
import { expect, test } from "bun:test";
import { loggedPath, REDACTED_LOGIN_LINK_PATH } from "../../src/serving/logged-path.ts";

const T = "3JqK9mZ_x-0aBcDeFgHiJkLmNoPqRsTuVwXyZ012345";

test("every spelling of a login link's path is printed without its token", () => {
  const spellings = [
    `/auth/link/${T}`,
    `/auth/./link/${T}`,
    `/auth/%2e/link/${T}`,
    `/auth/%2E%2e/auth/link/${T}`,
    `/auth%2Flink/${T}`,
    `/auth%2flink%2F${T}`,
    `//auth/link/${T}`,
    `/auth//link//${T}`,
    `/auth/link/../link/${T}`,
    `/x/../auth/link/${T}`,
    `/auth/%6Cink/${T}`,
    `/%61%75%74%68/%4C%49%4E%4B/${T}`,
    `/AUTH/Link/${T}`,
    `/auth\\link\\${T}`,
    `/auth/li\tnk/${T}`,
    `/auth/link/${T}/`,
    `/auth/link/${T}/more`,
    `/auth/link/%2e/${T}`,
    `/auth%252Flink/${T}`,
    `/auth/link?token=${T}`,
    `/auth/link#${T}`,
    `http://example.com/auth/./link/${T}`,
    `HTTPS://h:1/auth/link/${T}?x=1`,
  ];
  const printed = spellings.map(loggedPath);
  expect(printed).toEqual(spellings.map(() => REDACTED_LOGIN_LINK_PATH));
});

test("other paths are printed as sent, the link's POST path too", () => {
  const paths = ["/", "/healthz", "/v1/files", "/auth/link", "/auth//link/", "/auth/login", "/auth/keys/k_1", "/auth/link/..", "/s/abc", "/%41bc", "/auth/linkx/y", "/auth/link/../x", "-", "*"];
  expect(paths.map(loggedPath)).toEqual(paths);
});
