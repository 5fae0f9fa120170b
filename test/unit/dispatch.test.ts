// Where the dispatch sends a request, decided from its method and target alone.
import { expect, test } from "bun:test";
import { routeOf, type Route } from "../../src/server/dispatch.ts";

const rpcPaths = new Set(["/cubby.v1.FileService/GetFile"]);
const id = "V1StGXR8_Z5jdHi6B-myT";

test.each([
  ["an RPC path", "POST", "/cubby.v1.FileService/GetFile", { kind: "rpc", pathname: "/cubby.v1.FileService/GetFile" }],
  ["an RPC path with a query", "POST", "/cubby.v1.FileService/GetFile?x=1", { kind: "rpc", pathname: "/cubby.v1.FileService/GetFile" }],
  ["a content URL", "GET", `/${id}`, { kind: "content", pathname: `/${id}`, id, slug: undefined, search: "" }],
  ["a content URL with a slug and a query", "HEAD", `/${id}/a.pdf?download=1`, { kind: "content", pathname: `/${id}/a.pdf`, id, slug: "a.pdf", search: "?download=1" }],
  ["a content URL with an escaped slug, decoded", "GET", `/${id}/a%20b`, { kind: "content", pathname: `/${id}/a%20b`, id, slug: "a b", search: "" }],
  ["a path of three segments goes to the app", "GET", `/${id}/a/b`, { kind: "app", pathname: `/${id}/a/b` }],
  ["a content URL with another method goes to the app", "DELETE", `/${id}`, { kind: "app", pathname: `/${id}` }],
  ["a share link", "GET", "/s/abc_DEF-123?download=1", { kind: "share", pathname: "/s/abc_DEF-123", token: "abc_DEF-123", search: "?download=1" }],
  ["a share link's password form goes to the app", "POST", "/s/abc", { kind: "app", pathname: "/s/abc" }],
  ["REST", "GET", "/v1/files?page_size=2", { kind: "app", pathname: "/v1/files" }],
  ["the dashboard", "GET", "/", { kind: "app", pathname: "/" }],
  ["the metrics", "GET", "/metrics", { kind: "metrics", pathname: "/metrics" }],
  ["the metrics with a query", "HEAD", "/metrics?name[]=up", { kind: "metrics", pathname: "/metrics" }],
  ["the metrics with another method go to the app", "POST", "/metrics", { kind: "app", pathname: "/metrics" }],
  ["the health check", "GET", "/healthz", { kind: "health", pathname: "/healthz" }],
  ["the health check's HEAD, with a query", "HEAD", "/healthz?probe=1", { kind: "health", pathname: "/healthz" }],
  ["the health check with another method goes to the app (404)", "POST", "/healthz", { kind: "app", pathname: "/healthz" }],
  ["WebDAV's top, any method", "PROPFIND", "/dav/", { kind: "dav", pathname: "/dav/", search: "" }],
  ["WebDAV without the slash", "OPTIONS", "/dav", { kind: "dav", pathname: "/dav", search: "" }],
  ["a WebDAV GET with a query", "GET", "/dav/a/b.txt?download=1", { kind: "dav", pathname: "/dav/a/b.txt", search: "?download=1" }],
  ["a path that only starts like /dav goes to the app", "GET", "/davx", { kind: "app", pathname: "/davx" }],
] as [string, string, string, Route][])("%s", (_, method, target, route) => {
  expect(routeOf(method, target, rpcPaths)).toEqual(route);
});
