// The archive's records and byte level (docs/archive.md): every record round-trips exactly;
// anything but a well-formed record is refused with its offset; lines and content are read
// exactly whatever the chunking of the source.
import { expect, test } from "bun:test";
import { checksumOf } from "../../src/domain/checksum.ts";
import { AppError } from "../../src/errors.ts";
import { checkMagic, decodeRecord, encodeRecord, type ArchiveRecord } from "../../src/service/archive-format.ts";
import { NO_QUOTA } from "../../src/storage/ports.ts";
import { ArchiveReader, ArchiveWriter } from "../../src/service/archive-stream.ts";

const hash = new Uint8Array(32).map((_, i) => i * 7);
const fresh = { quotaBytes: null, disabledAt: null, lastSeenAt: null, displayName: null, showEmailOnShares: false, admin: false };
const linkToken = "L".repeat(31) + "_";
const shareToken = "S".repeat(31) + "-";
const records: ArchiveRecord[] = [
  { type: "user", row: { id: "u1", email: "a@example.com", issuer: null, subject: null, createdAt: 1, ...fresh } },
  { type: "user", row: { id: "u2", email: "b@example.com", issuer: "https://accounts.google.com", subject: "1234", createdAt: 2 ** 53 - 1, quotaBytes: 10 ** 9, disabledAt: 11, lastSeenAt: 12, displayName: "Bé ✓", showEmailOnShares: true, admin: true } },
  { type: "user", row: { id: "u3", email: "c@example.com", issuer: null, subject: null, createdAt: 1, quotaBytes: NO_QUOTA, disabledAt: null, lastSeenAt: null, displayName: null, showEmailOnShares: false, admin: false } },
  { type: "key", row: { id: "k1", userId: "u1", name: "", secretHash: hash, createdAt: 3, lastUsedAt: null, scopes: "files.read files.write", expiresAt: null, s3Secret: null } },
  { type: "key", row: { id: "k2", userId: "u1", name: "laptop ✓", secretHash: hash.map((b) => b ^ 1), createdAt: 3, lastUsedAt: 4, scopes: "files.read", expiresAt: 9, s3Secret: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY" } },
  { type: "session", row: { id: "s1", userId: "u2", secretHash: hash, createdAt: 5, expiresAt: 6 } },
  {
    type: "file",
    row: { id: "abcdefghijklmnopqrstu", ownerId: "u1", slug: "", name: "a\nb\"c", contentType: "text/plain; charset=utf-8", visibility: "public", size: 0, checksum: checksumOf(""), createdAt: 7, updatedAt: 8, expiresAt: null, uploadLinkId: null, folderId: null },
  },
  {
    type: "file",
    row: { id: "abcdefghijklmnopqrstv", ownerId: "u1", slug: "x", name: "", contentType: "text/plain", visibility: "private", size: 3, checksum: checksumOf("abc"), createdAt: 7, updatedAt: 8, expiresAt: 99, uploadLinkId: "l1", folderId: "fold1fold1fold1fold1f" },
  },
  { type: "folder", row: { id: "fold1fold1fold1fold1f", ownerId: "u1", parentId: null, name: "Scans ✓", createdAt: 5, updatedAt: 6 } },
  { type: "folder", row: { id: "fold2fold2fold2fold2f", ownerId: "u1", parentId: "fold1fold1fold1fold1f", name: "2026", createdAt: 5, updatedAt: 5 } },
  {
    type: "upload_link",
    row: { id: "l1", ownerId: "u1", token: linkToken, name: "Scans ✓", visibility: "internal", expiresAt: null, maxFiles: 3, maxBytes: 1000, filesUploaded: 1, bytesUploaded: 3, createdAt: 5, deletedAt: null },
  },
  {
    type: "upload_link",
    row: { id: "l2", ownerId: "u1", token: linkToken.toLowerCase(), name: "", visibility: "private", expiresAt: 10, maxFiles: null, maxBytes: null, filesUploaded: 0, bytesUploaded: 0, createdAt: 5, deletedAt: 9 },
  },
  {
    type: "share",
    row: { id: "sh1", fileId: "abcdefghijklmnopqrstu", folderId: null, ownerId: "u1", token: shareToken, expiresAt: 20, maxDownloads: 3, downloadCount: 1, lastDownloadAt: 8, passwordHash: "$argon2id$v=19$m=65536,t=2,p=1$c2FsdA$aGFzaA", createdAt: 6, deletedAt: null, items: null },
  },
  {
    type: "share",
    row: { id: "sh2", fileId: "abcdefghijklmnopqrstu", folderId: null, ownerId: "u1", token: shareToken.toLowerCase(), expiresAt: null, maxDownloads: null, downloadCount: 0, lastDownloadAt: null, passwordHash: null, createdAt: 6, deletedAt: 7, items: null },
  },
  {
    type: "share",
    row: { id: "sh3", fileId: "", folderId: "fold1fold1fold1fold1f", ownerId: "u1", token: shareToken.replace("S", "F"), expiresAt: null, maxDownloads: 2, downloadCount: 0, lastDownloadAt: null, passwordHash: null, createdAt: 6, deletedAt: null, items: null },
  },
  {
    type: "share",
    row: { id: "sh4", fileId: "", folderId: null, ownerId: "u1", token: shareToken.replace("S", "I"), expiresAt: null, maxDownloads: null, downloadCount: 0, lastDownloadAt: null, passwordHash: null, createdAt: 6, deletedAt: null, items: [{ file_id: "abcdefghijklmnopqrstu" }, { folder_id: "fold1fold1fold1fold1f" }] },
  },
  { type: "dav_property", row: { ownerId: "u1", resource: "file:abcdefghijklmnopqrstu", namespace: "urn:x", name: "color", value: '<x:color xmlns:x="urn:x">"red" &amp; blue</x:color>' } },
  { type: "dav_property", row: { ownerId: "u1", resource: "root", namespace: "", name: "plain", value: '<plain xmlns="">1</plain>' } },
  { type: "end", trailer: { users: 2, keys: 2, sessions: 1, uploadLinks: 2, files: 1, shares: 2, bytes: 0, folders: 2, davProperties: 2, crc32c: "AAAAAA==" } },
];

test.each(records.map((r) => [r.type, r] as const))("a %s record round-trips exactly, on one line", (_, record) => {
  const line = encodeRecord(record);
  expect(line.endsWith("\n")).toBe(true);
  expect(line.slice(0, -1)).not.toContain("\n");
  expect(decodeRecord(line.slice(0, -1), 0)).toEqual(record);
});

const json = (type: ArchiveRecord["type"]) => JSON.parse(encodeRecord(records.find((r) => r.type === type)!)) as Record<string, unknown>;
const file = json("file");
const key = json("key");
const user = JSON.parse(encodeRecord(records[1]!)) as Record<string, unknown>;
const link = json("upload_link");
const share = json("share");
const folder = json("folder");
const folderShare = JSON.parse(encodeRecord(records.find((r) => r.type === "share" && r.row.folderId !== null)!)) as Record<string, unknown>;

test("a quota of none is written as \"none\", not as the stored -1", () => {
  expect(JSON.parse(encodeRecord(records[2]!))).toMatchObject({ quota_bytes: "none" });
});

test.each([
  ["not JSON", "{", /a record is not JSON/],
  ["not an object", "[1]", /a record is not a JSON object/],
  ["an unknown type", JSON.stringify({ type: "webhook" }), /unknown record type "webhook" \(written by a newer cubby\?\)/],
  ["an unknown field", JSON.stringify({ ...file, expire_time: 1 }), /a file record has unknown field\(s\) "expire_time"/],
  ["a missing field", JSON.stringify({ ...file, checksum: undefined }), /a file record has no "checksum"/],
  ["a size that is a string", JSON.stringify({ ...file, size: "5" }), /"size" of a file record must be a whole number/],
  ["a negative size", JSON.stringify({ ...file, size: -1 }), /"size" of a file record must be a whole number/],
  ["a fractional time", JSON.stringify({ ...file, created_at: 1.5 }), /"created_at" of a file record must be a whole number/],
  ["a size past 2^53", JSON.stringify({ ...file, size: 2 ** 53 }), /must be a whole number from 0 to 2\^53/],
  ["a malformed checksum", JSON.stringify({ ...file, checksum: "abc" }), /"checksum" of a file record must be a base64 CRC32C/],
  ["an unknown visibility", JSON.stringify({ ...file, visibility: "secret" }), /must be one of private, internal, public/],
  ["a file ID of the wrong shape", JSON.stringify({ ...file, id: "short" }), /"short" is not a file ID/],
  ["an empty owner", JSON.stringify({ ...file, owner_id: "" }), /"owner_id" of a file record must be a non-empty string/],
  ["a short key hash", JSON.stringify({ ...key, secret_hash: Buffer.alloc(31).toString("base64") }), /must be a base64 SHA-256/],
  ["a key hash of another alphabet", JSON.stringify({ ...key, secret_hash: Buffer.alloc(32, 0xff).toString("base64url") + "=" }), /must be a base64 SHA-256/],
  ["a non-canonical key hash", JSON.stringify({ ...key, secret_hash: `${Buffer.alloc(32).toString("base64").slice(0, 42)}B=` }), /must be canonical base64/],
  ["an issuer without a subject", JSON.stringify({ ...user, subject: null }), /issuer and subject must both be set or both be null/],
  ["a null e-mail", JSON.stringify({ ...user, email: null }), /"email" of a user record must be a string/],
  ["a negative quota", JSON.stringify({ ...user, quota_bytes: -1 }), /"quota_bytes" of a user record must be a whole number of bytes, null or "none"/],
  ["a quota in words", JSON.stringify({ ...user, quota_bytes: "1 GB" }), /"quota_bytes" of a user record must be a whole number of bytes, null or "none"/],
  ["a user without disabled_at", JSON.stringify({ ...user, disabled_at: undefined }), /a user record has no "disabled_at"/],
  ["a link token of another shape", JSON.stringify({ ...link, token: "short" }), /"token" of a upload_link record must be a token of 32 URL-safe characters/],
  ["a link with a negative counter", JSON.stringify({ ...link, files_uploaded: -1 }), /"files_uploaded" of a upload_link record must be a whole number/],
  ["a share of something that is not a file ID", JSON.stringify({ ...share, file_id: "x" }), /"x" is not a file ID/],
  ["a share with an empty password hash", JSON.stringify({ ...share, password_hash: "" }), /"password_hash" of a share record must be a non-empty string/],
  ["a share with an unknown field", JSON.stringify({ ...share, webhook: null }), /a share record has unknown field\(s\) "webhook"/],
  ["a file with an empty upload link", JSON.stringify({ ...file, upload_link_id: "" }), /"upload_link_id" of a file record must be a non-empty string/],
  ["a file without folder_id", JSON.stringify({ ...file, folder_id: undefined }), /a file record has no "folder_id"/],
  ["a folder ID of the wrong shape", JSON.stringify({ ...folder, id: "f1" }), /"f1" is not a folder ID/],
  ["a folder named ..", JSON.stringify({ ...folder, name: ".." }), /"name" of a folder record must be a folder name \(name: '\.' and '\.\.' are not folder names\)/],
  ["a folder with an empty name", JSON.stringify({ ...folder, name: "" }), /"name" of a folder record must be a folder name/],
  ["a folder name with a slash", JSON.stringify({ ...folder, name: "a/b" }), /"name" of a folder record must be a folder name/],
  ["a folder with an unknown field", JSON.stringify({ ...folder, colour: "red" }), /a folder record has unknown field\(s\) "colour"/],
  ["a folder's share that names a file too", JSON.stringify({ ...folderShare, file_id: "abcdefghijklmnopqrstu" }), /a folder's share has file_id "", not "abcdefghijklmnopqrstu"/],
  ["a share with neither file nor folder", JSON.stringify({ ...folderShare, folder_id: null }), /"file_id" of a share record must be a non-empty string/],
])("refused: %s", (_, line, message) => {
  let thrown: unknown;
  try {
    decodeRecord(line, 1234);
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(AppError);
  expect({ code: (thrown as AppError).code, message: (thrown as AppError).message }).toEqual({
    code: "invalid_argument",
    message: expect.stringMatching(/^damaged archive at byte 1234: /),
  });
  expect((thrown as AppError).message).toMatch(message);
});

test.each([
  ["cubby-archive 1", 1],
  ["cubby-archive 2", 2],
  ["cubby-archive 3", 3],
  ["cubby-archive 4", 4],
  ["cubby-archive 5", 5],
  ["cubby-archive 6", 6],
  ["cubby-archive 7", 7],
  ["cubby-archive 8", 8],
  [
    "cubby-archive 9",
    'archive format "cubby-archive 9" is not one this cubby reads (written by a newer cubby?); it reads "cubby-archive 1", "cubby-archive 2", "cubby-archive 3", "cubby-archive 4", "cubby-archive 5", "cubby-archive 6", "cubby-archive 7", "cubby-archive 8"; nothing was changed',
  ],
  ["cubby-archive 2b", 'archive format "cubby-archive 2b" is not one this cubby reads; it reads "cubby-archive 1", "cubby-archive 2", "cubby-archive 3", "cubby-archive 4", "cubby-archive 5", "cubby-archive 6", "cubby-archive 7", "cubby-archive 8"; nothing was changed'],
  ["PK\u0003\u0004", 'not a cubby archive (it does not start with "cubby-archive 8")'],
])("magic line %p", (line, outcome) => {
  if (typeof outcome === "number") expect(checkMagic(line)).toBe(outcome as 1 | 2 | 3 | 4);
  else expect(() => checkMagic(line)).toThrow(outcome);
});

test("a version 2 archive's records read with the defaults (users enabled, quota from QUOTA_BYTES, files through no link); version 3 records and fields in one are refused", () => {
  const v2user = '{"type":"user","id":"u1","email":"a@example.com","issuer":null,"subject":null,"created_at":1}';
  expect(decodeRecord(v2user, 0, 2)).toEqual({ type: "user", row: { id: "u1", email: "a@example.com", issuer: null, subject: null, createdAt: 1, ...fresh } });
  expect(() => decodeRecord(v2user, 0, 3)).toThrow('a user record has no "quota_bytes"');
  expect(() => decodeRecord(JSON.stringify(user), 0, 2)).toThrow('unknown field(s) "quota_bytes", "disabled_at", "last_seen_at"');
  const { upload_link_id: _, folder_id: _f, ...v2file } = file;
  expect(decodeRecord(JSON.stringify(v2file), 0, 2)).toMatchObject({ type: "file", row: { uploadLinkId: null, expiresAt: null } });
  expect(() => decodeRecord(JSON.stringify({ ...file, folder_id: undefined }), 0, 2)).toThrow('unknown field(s) "upload_link_id"');
  expect(() => decodeRecord(JSON.stringify(share), 0, 2)).toThrow("a share record in a version 2 archive (records of that type came with version 3)");
  expect(() => decodeRecord(JSON.stringify(link), 0, 1)).toThrow("a upload_link record in a version 1 archive");
  const v2end = '{"type":"end","users":1,"keys":0,"sessions":0,"files":0,"bytes":0,"crc32c":"AAAAAA=="}';
  expect(decodeRecord(v2end, 0, 2)).toEqual({ type: "end", trailer: { users: 1, keys: 0, sessions: 0, uploadLinks: 0, files: 0, shares: 0, bytes: 0, folders: 0, davProperties: 0, crc32c: "AAAAAA==" } });
  expect(() => decodeRecord(v2end, 0, 3)).toThrow('a end record has no "upload_links"');
});

test("a version 3 archive's records read with no folders (every file at the top, every share a file's); version 4 records and fields in one are refused", () => {
  const { folder_id: _, ...v3file } = file;
  expect(decodeRecord(JSON.stringify(v3file), 0, 3)).toMatchObject({ type: "file", row: { folderId: null } });
  expect(() => decodeRecord(JSON.stringify(v3file), 0, 4)).toThrow('a file record has no "folder_id"');
  expect(() => decodeRecord(JSON.stringify(file), 0, 3)).toThrow('unknown field(s) "folder_id"');
  const { folder_id: _s, last_download_at: _d, items: _i, ...v3share } = share;
  expect(decodeRecord(JSON.stringify(v3share), 0, 3)).toMatchObject({ type: "share", row: { folderId: null, fileId: "abcdefghijklmnopqrstu" } });
  expect(() => decodeRecord(JSON.stringify(folderShare), 0, 3)).toThrow('"file_id" of a share record must be a non-empty string');
  expect(() => decodeRecord(JSON.stringify(share), 0, 3)).toThrow('unknown field(s) "folder_id"');
  expect(() => decodeRecord(JSON.stringify(folder), 0, 3)).toThrow("a folder record in a version 3 archive (records of that type came with version 4)");
  const v3end = '{"type":"end","users":1,"keys":0,"sessions":0,"upload_links":0,"files":0,"shares":0,"bytes":0,"crc32c":"AAAAAA=="}';
  expect(decodeRecord(v3end, 0, 3)).toMatchObject({ type: "end", trailer: { folders: 0, shares: 0 } });
  expect(() => decodeRecord(v3end, 0, 4)).toThrow('a end record has no "folders"');
});

test("a version 5 archive's shares read as never downloaded and its users as named by their e-mail, not admins; version 6 fields in one are refused", () => {
  const { last_download_at: _, items: _i, ...v5share } = share;
  expect(decodeRecord(JSON.stringify(v5share), 0, 5)).toMatchObject({ type: "share", row: { lastDownloadAt: null } });
  expect(() => decodeRecord(JSON.stringify(v5share), 0, 6)).toThrow('a share record has no "last_download_at"');
  expect(() => decodeRecord(JSON.stringify(share), 0, 5)).toThrow('unknown field(s) "last_download_at"');
  const { display_name: _n, show_email_on_shares: _e, admin: _a, ...v5user } = json("user");
  expect(decodeRecord(JSON.stringify(v5user), 0, 5)).toMatchObject({ type: "user", row: { displayName: null, showEmailOnShares: false, admin: false } });
  expect(() => decodeRecord(JSON.stringify(v5user), 0, 6)).toThrow('a user record has no "display_name"');
});

test("a version 7 archive's shares read as a file's or a folder's; items in one are refused; a version 8 share's items are checked", () => {
  const { items: _, ...v7share } = share;
  expect(decodeRecord(JSON.stringify(v7share), 0, 7)).toMatchObject({ type: "share", row: { items: null } });
  expect(() => decodeRecord(JSON.stringify(v7share), 0, 8)).toThrow('a share record has no "items"');
  expect(() => decodeRecord(JSON.stringify(share), 0, 7)).toThrow('unknown field(s) "items"');
  const several = { ...share, file_id: "", folder_id: null, items: [{ file_id: "abcdefghijklmnopqrstu" }, { folder_id: "fold1fold1fold1fold1f" }] };
  expect(decodeRecord(JSON.stringify(several), 0, 8)).toMatchObject({ type: "share", row: { fileId: "", folderId: null, items: several.items } });
  for (const items of [[], [{ file_id: "abcdefghijklmnopqrstu" }, { file_id: "abcdefghijklmnopqrstu" }], [{ file_id: "../x" }], [{ file_id: "abcdefghijklmnopqrstu", folder_id: "fold1fold1fold1fold1f" }], [{ blob: "x" }], "x", Array.from({ length: 101 }, (_, i) => ({ file_id: `abcdefghijklmnopqrs${String(i).padStart(2, "0")}` }))]) {
    expect(() => decodeRecord(JSON.stringify({ ...several, items }), 0, 8)).toThrow('"items" of a share record must be null, or a list of 1 to 100');
  }
  expect(() => decodeRecord(JSON.stringify({ ...several, file_id: "abcdefghijklmnopqrstu" }), 0, 8)).toThrow('a share of several items has file_id "" and folder_id null');
});

test("a version 4 archive reads with no dead properties; a dead property record in one is refused, as is one naming no resource", () => {
  const v4end = '{"type":"end","users":1,"keys":0,"sessions":0,"upload_links":0,"files":0,"shares":0,"bytes":0,"folders":0,"crc32c":"AAAAAA=="}';
  expect(decodeRecord(v4end, 0, 4)).toMatchObject({ type: "end", trailer: { davProperties: 0 } });
  expect(() => decodeRecord(v4end, 0, 5)).toThrow('a end record has no "dav_properties"');
  const property = { type: "dav_property", owner_id: "u1", resource: "folder:fold1fold1fold1fold1f", namespace: "urn:x", name: "n", value: '<x:n xmlns:x="urn:x"/>' };
  expect(decodeRecord(JSON.stringify(property), 0, 5)).toMatchObject({ type: "dav_property", row: { resource: "folder:fold1fold1fold1fold1f" } });
  expect(() => decodeRecord(JSON.stringify(property), 0, 4)).toThrow("a dav_property record in a version 4 archive (records of that type came with version 5)");
  expect(() => decodeRecord(JSON.stringify({ ...property, resource: "file:../x" }), 0, 5)).toThrow("is not a WebDAV resource");
});

test("a version 1 archive's records read with the defaults (every scope, no expiry); version 2 fields in one are refused", () => {
  const key = '{"type":"key","id":"k1","user_id":"u1","name":"","secret_hash":"AAcOFRwjKjE4P0ZNVFtiaXB3foWMk5qhqK+2vcTL0tk=","created_at":3,"last_used_at":null}';
  expect(decodeRecord(key, 0, 1)).toMatchObject({ type: "key", row: { scopes: "files.read files.write", expiresAt: null } });
  expect(() => decodeRecord(key, 0, 2)).toThrow('a key record has no "scopes"');
  const withScopes = key.replace("}", ',"scopes":"files.read","expires_at":null}');
  expect(decodeRecord(withScopes, 0, 2)).toMatchObject({ type: "key", row: { scopes: "files.read", expiresAt: null } });
  expect(() => decodeRecord(withScopes, 0, 1)).toThrow('unknown field(s) "scopes", "expires_at"');
  expect(() => decodeRecord(withScopes.replace('"files.read"', '"files.admin"'), 0, 2)).toThrow("scopes");
});

/** The bytes of `data` in pieces of `size` (the last may be shorter). */
async function* pieces(data: Uint8Array, size: number) {
  for (let off = 0; off < data.length; off += size) yield data.slice(off, off + size);
}

const sample = Buffer.concat([Buffer.from("first line\nsecond ✓\n"), Buffer.from([0, 1, 2, 10, 3, 4]), Buffer.from("\nlast\n")]);

test.each([1, 2, 3, 7, 1000])("the reader gives the same lines, bytes and checksum in chunks of %d", async (size) => {
  const reader = new ArchiveReader(pieces(sample, size));
  expect(await reader.line(100)).toBe("first line");
  expect(await reader.line(100)).toBe("second ✓");
  const content: number[] = [];
  for await (const piece of reader.bytes(6, "the content")) content.push(...piece);
  expect(content).toEqual([0, 1, 2, 10, 3, 4]);
  await reader.newline("the content");
  const before = reader.checksum();
  expect(before).toBe(checksumOf(sample.subarray(0, sample.length - 5)));
  expect(await reader.line(100)).toBe("last");
  expect({ end: await reader.atEnd(), line: await reader.line(100), offset: reader.offset, crc: reader.checksum() }).toEqual({
    end: true,
    line: undefined,
    offset: sample.length,
    crc: checksumOf(sample),
  });
});

test.each([
  ["a line longer than the limit", Buffer.from("0123456789\n"), (r: ArchiveReader) => r.line(9), /^damaged archive at byte 0: a record is longer than 9 bytes$/],
  ["a line cut by the end", Buffer.from("abc"), (r: ArchiveReader) => r.line(9), /^damaged archive at byte 3: the archive ends inside a record \(truncated\?\)$/],
  ["a line that is not UTF-8", Buffer.from([0x61, 0xff, 0x0a]), (r: ArchiveReader) => r.line(9), /^damaged archive at byte 0: a record is not UTF-8$/],
  [
    "content cut by the end",
    Buffer.from("abc"),
    async (r: ArchiveReader) => {
      for await (const _ of r.bytes(5, "the content of file x"));
    },
    /^damaged archive at byte 3: the archive ends inside the content of file x \(truncated\?\)$/,
  ],
  ["content not followed by a line break", Buffer.from("abcX"), async (r: ArchiveReader) => {
    for await (const _ of r.bytes(3, "the content of file x"));
    await r.newline("the content of file x");
  }, /^damaged archive at byte 3: the content of file x is not followed by a line break$/],
] as const)("the reader refuses %s", async (_, data, read, message) => {
  await expect(read(new ArchiveReader(pieces(data, 2)))).rejects.toThrow(message);
});

test("the writer passes every byte through in order, small ones gathered, and checksums them", async () => {
  const received: Uint8Array[] = [];
  // A copy: Buffer#slice would be a view of the buffer the writer reuses.
  const writer = new ArchiveWriter({ write: async (b) => void received.push(new Uint8Array(b)) });
  const big = crypto.getRandomValues(new Uint8Array(600_000));
  await writer.text("header\n");
  await writer.bytes(big);
  for (let i = 0; i < 3000; i++) await writer.text(`line ${i}\n`);
  await writer.flush();
  const expected = Buffer.concat([Buffer.from("header\n"), big, ...Array.from({ length: 3000 }, (_, i) => Buffer.from(`line ${i}\n`))]);
  expect(Buffer.concat(received).equals(expected)).toBe(true);
  expect({ offset: writer.offset, crc: writer.checksum(), writes: received.length }).toEqual({ offset: expected.length, crc: checksumOf(expected), writes: 3 });
});
