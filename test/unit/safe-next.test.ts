// safeNext decides where a browser goes after sign-in: it must never leave the origin, whatever
// the `next` parameter holds (open redirect, CWE-601).
import { expect, test } from "bun:test";
import fc from "fast-check";
import { safeNext } from "../../src/auth/oidc.ts";

// Paths are made of pieces that matter to URL parsers: a few, so that sequences like `/.//`
// come up often, and many, so that odd mixtures do.
const FEW = ["/", ".", "..", "\\", "%2e", "evil.example"];
const MANY = [...FEW, ":", "@", "?", "#", "%2F", "%5C", "http:", "https:", "javascript:", "\t", "\n", " ", "a", "files"];
const pieces = (alphabet: string[], maxLength: number) => fc.array(fc.constantFrom(...alphabet), { maxLength }).map((parts) => parts.join(""));
const anyNext = fc.oneof(pieces(FEW, 8), pieces(MANY, 12), fc.string({ maxLength: 40 }), pieces(FEW, 8).map((s) => `/${s}`));

/** Where a browser on https://cubby.example.org/auth/callback goes for a Location of `next`. */
const landing = (next: string) => new URL(next, "https://cubby.example.org/auth/callback");

test("the answer always stays on the origin and is a path", () => {
  fc.assert(
    fc.property(anyNext, (raw) => {
      const next = safeNext(raw);
      expect(next.startsWith("/")).toBe(true);
      expect(next.startsWith("//")).toBe(false);
      expect(/[\x00-\x1F\x7F\\]/.test(next)).toBe(false);
      expect(landing(next).origin).toBe("https://cubby.example.org");
    }),
    { numRuns: 5000 },
  );
});

test("the answer is a fixed point: what it returns, it returns unchanged", () => {
  fc.assert(
    fc.property(anyNext, (raw) => {
      const next = safeNext(raw);
      expect(safeNext(next)).toBe(next);
    }),
    { numRuns: 5000 },
  );
});

test("ordinary paths are kept, with their query and fragment", () => {
  for (const p of ["/", "/v1/files", "/abc?x=1#top", "/a/b/../c"]) expect(landing(safeNext(p)).pathname).toBe(landing(p).pathname);
  expect(safeNext("/abc?x=1#top")).toBe("/abc?x=1#top");
});

test.each(["/.//evil.example", "/a/..//evil.example", "/%2e//evil.example", "//evil.example", "/\\evil.example", "https://evil.example/", "javascript:alert(1)", "evil.example", ""])(
  "%p goes to /",
  (raw) => {
    expect(safeNext(raw)).toBe("/");
  },
);
