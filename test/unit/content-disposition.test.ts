import { expect, test } from "bun:test";
import { contentDisposition } from "../../src/domain/content-disposition.ts";

// RFC 6266 §4.3 / RFC 8187 §3.2.3: an ASCII fallback and the exact UTF-8 name.
test.each([
  ["no name", "inline", "", "inline"],
  ["plain ASCII", "inline", "report.pdf", `inline; filename="report.pdf"; filename*=UTF-8''report.pdf`],
  ["space", "attachment", "my file.txt", `attachment; filename="my file.txt"; filename*=UTF-8''my%20file.txt`],
  ["non-ASCII", "inline", "€ rates.pdf", `inline; filename="_ rates.pdf"; filename*=UTF-8''%E2%82%AC%20rates.pdf`],
  ["quotes and backslash cannot escape", "inline", 'a"b\\c.txt', `inline; filename="a_b_c.txt"; filename*=UTF-8''a%22b%5Cc.txt`],
  ["attr-char specials encoded", "inline", "it's (1)*.txt", `inline; filename="it's (1)*.txt"; filename*=UTF-8''it%27s%20%281%29%2A.txt`],
  ["percent in fallback", "inline", "100%.txt", `inline; filename="100_.txt"; filename*=UTF-8''100%25.txt`],
])("%s", (_, type, name, want) => expect(contentDisposition(type as "inline" | "attachment", name)).toBe(want));
