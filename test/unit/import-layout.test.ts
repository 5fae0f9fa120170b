/**
 * The import rules of docs/design.md's layout, read from src/ itself: no import cycle between
 * folders of src/ (each file at src/'s top counts as a node of its own), and domain/ and
 * errors.ts importing nothing of cubby's but each other. Type-only, re-exporting and dynamic imports count.
 */
import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";

const SRC = path.resolve(import.meta.dir, "../../src");

/** Relative module specifiers of `import … from`, `export … from`, `import "…"` and `import("…")`. */
const SPECIFIER = /(?:\bfrom|\bimport)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g;

/** Every import of one file of src/ by another: paths relative to src/. */
function importEdges(): { from: string; to: string }[] {
  const files = fs
    .readdirSync(SRC, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => path.join(e.parentPath, e.name));
  return files.flatMap((file) =>
    [...fs.readFileSync(file, "utf8").matchAll(SPECIFIER)]
      .map((m) => path.relative(SRC, path.resolve(path.dirname(file), m[1]!)))
      .filter((to) => !to.startsWith(".."))
      .map((to) => ({ from: path.relative(SRC, file), to })),
  );
}

/** The node a file of src/ belongs to: its top folder (`service/`), or itself at the top (`errors.ts`). */
const nodeOf = (file: string) => (file.includes(path.sep) ? `${file.split(path.sep)[0]}/` : file);

/** Each cycle found by a depth-first walk, as its nodes in order (the first repeated at the end). */
function cycles(graph: Map<string, Set<string>>): string[][] {
  const found: string[][] = [];
  const done = new Set<string>();
  const walk = (node: string, trail: string[]) => {
    const at = trail.indexOf(node);
    if (at >= 0) return void found.push([...trail.slice(at), node]);
    if (done.has(node)) return;
    for (const next of [...(graph.get(node) ?? [])].sort()) walk(next, [...trail, node]);
    done.add(node);
  };
  for (const node of [...graph.keys()].sort()) walk(node, []);
  return found;
}

describe("src/'s imports follow the layout (docs/design.md)", () => {
  const edges = importEdges();

  test("the scan sees the imports (a guard against a regex that matches nothing)", () => {
    expect(edges).toContainEqual({ from: "service/files.ts", to: "storage/ports.ts" });
    expect(edges).toContainEqual({ from: "process/serve.ts", to: "process/start-serving.ts" });
    expect(edges).toContainEqual({ from: "server/dispatch.ts", to: "dav/handler.ts" });
  });

  test("no import cycle between folders", () => {
    const graph = new Map<string, Set<string>>();
    for (const { from, to } of edges) {
      const [a, b] = [nodeOf(from), nodeOf(to)];
      if (a === b) continue;
      graph.set(a, (graph.get(a) ?? new Set()).add(b));
    }
    expect(cycles(graph)).toEqual([]);
  });

  test("dav/ (WebDAV) is a transport: only server/ imports it, and it imports no other transport (the content rules it shares are serving/'s)", () => {
    const into = edges.filter(({ from, to }) => nodeOf(to) === "dav/" && nodeOf(from) !== "dav/" && nodeOf(from) !== "server/");
    const out = edges.filter(({ from, to }) => nodeOf(from) === "dav/" && ["http/", "rpc/", "mcp/", "server/", "process/"].includes(nodeOf(to)));
    expect({ into, out }).toEqual({ into: [], out: [] });
  });

  test("s3/ (the S3 endpoint) is a transport too: only server/ imports it, and it imports no other transport", () => {
    const into = edges.filter(({ from, to }) => nodeOf(to) === "s3/" && nodeOf(from) !== "s3/" && nodeOf(from) !== "server/");
    const out = edges.filter(({ from, to }) => nodeOf(from) === "s3/" && ["http/", "rpc/", "mcp/", "server/", "process/", "dav/"].includes(nodeOf(to)));
    expect({ into, out }).toEqual({ into: [], out: [] });
  });

  test("serving/ (what answers content, share links and pages on the exchange) imports nothing of http/ (the REST routes)", () => {
    expect(edges.filter(({ from, to }) => nodeOf(from) === "serving/" && nodeOf(to) === "http/")).toEqual([]);
  });

  test("domain/ and errors.ts import nothing of cubby's but each other", () => {
    const bottom = (file: string) => nodeOf(file) === "domain/" || file === "errors.ts";
    const outside = edges.filter(({ from, to }) => bottom(from) && !bottom(to));
    expect(outside).toEqual([]);
  });
});
