// The image's `org.opencontainers.image.source` label is a URL a browser opens (issue 39's CI:
// a clean clone of a local path named its path there).
import { expect, test } from "bun:test";
import { browsableRemote } from "../../scripts/image.ts";

test.each([
  ["https://github.com/o/cubby.git", "https://github.com/o/cubby"],
  ["https://github.com/o/cubby", "https://github.com/o/cubby"],
  ["https://user:token@git.example/o/cubby.git", "https://git.example/o/cubby"],
  ["git@github.com:o/cubby.git", "https://github.com/o/cubby"],
  ["/work/main", undefined],
  ["file:///work/main", undefined],
  ["../main", undefined],
  ["", undefined],
])("%p → %p", (remote, url) => {
  expect(browsableRemote(remote)).toBe(url);
});
