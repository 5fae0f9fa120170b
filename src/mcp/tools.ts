/**
 * The MCP tools of CONTRACT §9 (`upload_file`, `list_files`, `get_file`, `publish_file`,
 * `unpublish_file`, `create_share_link`, `delete_file`) and §12 (`list_folders`,
 * `create_folder`, `move_file`) for one authenticated caller. Like the
 * REST and RPC edges, nothing here decides anything: arguments become domain values with the
 * same parsers (domain/params.ts), the same services decide, and the answer is the same File,
 * Folder or Share JSON REST sends.
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { report } from "../context/report.ts";
import type { RequestContext } from "../context/request-context.ts";
import { toFileJson, VISIBILITIES } from "../domain/file.ts";
import { toFilePageJson } from "../domain/file-page.ts";
import { MAX_PAGE_SIZE, parseFileId, parseName, parseNameQuery, parsePageToken, parseSlug, DEFAULT_PAGE_SIZE } from "../domain/params.ts";
import type { Principal } from "../domain/principal.ts";
import { toShareJson } from "../domain/share.ts";
import { parseParentId, toFolderJson, toFolderPageJson } from "../domain/folder.ts";
import type { FileService } from "../service/files.ts";
import type { FolderService } from "../service/folders.ts";
import type { ShareService } from "../service/shares.ts";
import { decodeUploadContent, maxInlineBytes, TEXT_CONTENT_TYPE } from "./upload-content.ts";

/** What the tools need: the services REST uses, the public origin and the upload limit. */
export interface FileToolsDeps {
  files: FileService;
  shares: ShareService;
  folders: FolderService;
  /** Public origin for file and share URLs (HOSTNAME). */
  baseUrl: () => string;
  /** Largest content accepted, in bytes (MAX_UPLOAD_BYTES). */
  maxUploadBytes: number;
}

/** The caller of one request: who they are, and the request's context for error reports. */
export interface ToolCaller {
  principal: Principal;
  context: RequestContext;
}

const fileId = z.string().describe("The file's ID (21 characters of A-Z a-z 0-9 _ -).");
const expiry = {
  ttl: z.string().optional().describe('How long until it expires: a number and s, m, h or d ("90s", "15m", "12h", "7d").'),
  expire_time: z.string().optional().describe("When it expires, RFC 3339 (2030-01-01T00:00:00Z); give this or ttl."),
};

/** The File object of the specification (CONTRACT §2), as REST sends it. */
const FileSchema = z.object({
  id: z.string(),
  slug: z.string(),
  url: z.string(),
  name: z.string(),
  content_type: z.string(),
  size: z.string().describe("Bytes, as a decimal string."),
  checksum: z.string().describe("CRC32C of the content, base64."),
  visibility: z.enum(VISIBILITIES),
  created_at: z.string(),
  updated_at: z.string(),
});

/** The Share object of CONTRACT §8. */
const ShareSchema = z.object({
  id: z.string(),
  file_id: z.string(),
  url: z.string().describe("Serves the file's content to whoever has it, whatever the file's visibility."),
  expire_time: z.string().describe("RFC 3339, or empty for never."),
  max_downloads: z.number().int().nullable(),
  download_count: z.number().int(),
  has_password: z.boolean(),
  created_at: z.string(),
});

const idOnly = z.strictObject({ id: fileId });

/** The Folder object of CONTRACT §12, as REST sends it. */
const FolderSchema = z.object({
  id: z.string(),
  name: z.string(),
  parent_id: z.string().describe("The folder it is in; empty at the top."),
  url: z.string().describe("Where the dashboard shows it."),
  file_count: z.number().int().describe("Files directly in it."),
  bytes: z.string().describe("Their bytes, as a decimal string."),
  created_at: z.string(),
  updated_at: z.string(),
});

/**
 * Registers the ten tools on `server`, each acting as `caller`. A failure becomes a tool
 * error (`isError`, the message REST would give: "this key lacks files.write", "file not
 * found", …), reported like any other surface's (context/report.ts: internal errors are logged
 * with the request ID and answered "internal error"). Arguments the input schema refuses
 * become tool errors in the SDK before a handler runs.
 */
export function registerFileTools(server: McpServer, deps: FileToolsDeps, caller: ToolCaller): void {
  const { files, shares, folders } = deps;
  const { principal } = caller;
  const fileJson = (record: Parameters<typeof toFileJson>[1]) => toFileJson(deps.baseUrl(), record);
  const run = async (work: () => Promise<object>): Promise<CallToolResult> => {
    try {
      const value = await work();
      return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value as Record<string, unknown> };
    } catch (err) {
      return { content: [{ type: "text", text: report(err, caller.context).message }], isError: true };
    }
  };

  server.registerTool(
    "upload_file",
    {
      title: "Upload a file",
      description:
        `Stores a new file and answers with its File object (its url serves the content). Give the content as text (content, stored as UTF-8, ` +
        `content_type defaults to ${TEXT_CONTENT_TYPE}) or as base64 (content_base64, content_type defaults to application/octet-stream), ` +
        `at most ${maxInlineBytes(deps.maxUploadBytes)} bytes (bigger files: the REST API or tus). Visibility: private (only you), internal (anyone signed in; the default) or public (anyone).`,
      inputSchema: z.strictObject({
        name: z.string().min(1).describe('The file name shown and offered on download, e.g. "notes.md" (at most 255 characters, no "/").'),
        content: z.string().optional().describe("The content as text."),
        content_base64: z.string().optional().describe("The content as base64 (RFC 4648), for binary files."),
        content_type: z.string().optional().describe('A media type, e.g. "text/markdown" or "image/png".'),
        visibility: z.enum(VISIBILITIES).optional().describe("Who can open the file's url; default internal."),
        slug: z.string().optional().describe("An optional last URL segment (A-Z a-z 0-9 . _ ~ -)."),
        ...expiry,
      }),
      outputSchema: FileSchema,
      annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (args, extra) =>
      run(async () => {
        const name = parseName(args.name);
        const slug = parseSlug(args.slug ?? "");
        const expiresAt = files.expiryFrom({ expire_time: args.expire_time, ttl: args.ttl });
        const { bytes, contentType } = decodeUploadContent(args, deps.maxUploadBytes);
        const content = (async function* () {
          yield bytes;
        })();
        return fileJson(await files.create(principal, { name, slug, visibility: args.visibility, contentType, expiresAt, content, signal: extra.signal }));
      }),
  );

  server.registerTool(
    "list_files",
    {
      title: "List your files",
      description:
        `Your files, newest first, page_size at a time (default ${DEFAULT_PAGE_SIZE}); pass next_page_token back as page_token for the next page ` +
        `(empty on the last page). q keeps only files whose name contains it (ASCII letters in either case).`,
      inputSchema: z.strictObject({
        page_size: z.number().int().min(1).max(MAX_PAGE_SIZE).optional(),
        page_token: z.string().optional(),
        q: z.string().optional().describe("Text the file name must contain."),
      }),
      outputSchema: z.object({ files: z.array(FileSchema), next_page_token: z.string() }),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args) =>
      run(async () => {
        const page = await files.list(principal, args.page_size ?? DEFAULT_PAGE_SIZE, parsePageToken(args.page_token ?? ""), parseNameQuery(args.q ?? ""));
        return toFilePageJson(deps.baseUrl(), page);
      }),
  );

  server.registerTool(
    "get_file",
    {
      title: "Get a file's metadata",
      description: "The File object of one file: yours, or another user's internal or public one.",
      inputSchema: idOnly,
      outputSchema: FileSchema,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args) => run(async () => fileJson(await files.get(principal, parseFileId(args.id)))),
  );

  server.registerTool(
    "publish_file",
    {
      title: "Publish a file",
      description: "Makes one of your files public (its url opens for anyone) and answers with its File object.",
      inputSchema: idOnly,
      outputSchema: FileSchema,
      annotations: { destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    (args) => run(async () => fileJson(await files.publish(principal, parseFileId(args.id)))),
  );

  server.registerTool(
    "unpublish_file",
    {
      title: "Unpublish a file",
      description: "Makes one of your files internal again (only signed-in users open its url) and answers with its File object.",
      inputSchema: idOnly,
      outputSchema: FileSchema,
      annotations: { destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    (args) => run(async () => fileJson(await files.unpublish(principal, parseFileId(args.id)))),
  );

  server.registerTool(
    "create_share_link",
    {
      title: "Create a share link",
      description:
        "A secret URL that serves one of your files to whoever has it, whatever the file's visibility; optionally until a time (ttl or " +
        "expire_time), for at most max_downloads downloads, or behind a password. Answers with the Share object.",
      inputSchema: z.strictObject({
        id: fileId,
        ...expiry,
        max_downloads: z.number().int().nullable().optional().describe("Downloads allowed (from 1), or null for no limit."),
        password: z.string().optional().describe("A password the link asks for."),
      }),
      outputSchema: ShareSchema,
      annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (args) =>
      run(async () => {
        const id = parseFileId(args.id);
        const input = { expiresAt: files.expiryFrom({ expire_time: args.expire_time, ttl: args.ttl }), maxDownloads: args.max_downloads, password: args.password };
        return toShareJson(deps.baseUrl(), await shares.create(principal, id, input));
      }),
  );

  server.registerTool(
    "delete_file",
    {
      title: "Delete a file",
      description: "Deletes one of your files for good: its url and share links stop working. Answers {}.",
      inputSchema: idOnly,
      outputSchema: z.object({}),
      annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    (args) =>
      run(async () => {
        await files.delete(principal, parseFileId(args.id));
        return {};
      }),
  );

  server.registerTool(
    "list_folders",
    {
      title: "List your folders",
      description:
        `Your folders in one folder (parent_id) or at the top (no parent_id), newest first, page_size at a time (default ${DEFAULT_PAGE_SIZE}); ` +
        "pass next_page_token back as page_token for the next page (empty on the last page). file_count and bytes count the files directly in each.",
      inputSchema: z.strictObject({
        parent_id: z.string().optional().describe("The folder whose sub-folders to list; empty or absent: the top."),
        page_size: z.number().int().min(1).max(MAX_PAGE_SIZE).optional(),
        page_token: z.string().optional(),
      }),
      outputSchema: z.object({ folders: z.array(FolderSchema), next_page_token: z.string() }),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args) =>
      run(async () => {
        const page = await folders.list(principal, parseParentId(args.parent_id ?? ""), args.page_size ?? DEFAULT_PAGE_SIZE, parsePageToken(args.page_token ?? ""));
        return toFolderPageJson(deps.baseUrl(), page);
      }),
  );

  server.registerTool(
    "create_folder",
    {
      title: "Create a folder",
      description:
        'Creates a folder at the top or in one of your folders (parent_id) and answers with its Folder object. Names are unique within a folder, files and sub-folders alike (at most 255 characters, no "/", not "." or "..").',
      inputSchema: z.strictObject({
        name: z.string().describe('The folder\'s name, e.g. "Invoices".'),
        parent_id: z.string().optional().describe("The folder to create it in; empty or absent: the top."),
      }),
      outputSchema: FolderSchema,
      annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (args) => run(async () => toFolderJson(deps.baseUrl(), await folders.create(principal, { name: args.name, parentId: parseParentId(args.parent_id ?? "") }))),
  );

  server.registerTool(
    "move_file",
    {
      title: "Move a file into a folder",
      description:
        "Moves one of your files into one of your folders (folder_id), out of any folder it was in; an empty folder_id moves it to the top. Fails when the folder already holds a file or sub-folder of its name. Answers {}.",
      inputSchema: z.strictObject({
        id: fileId,
        folder_id: z.string().describe("The folder to move it to; empty: the top (in no folder)."),
      }),
      outputSchema: z.object({}),
      annotations: { destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    (args) =>
      run(async () => {
        await folders.moveFile(principal, parseParentId(args.folder_id, "folder_id"), parseFileId(args.id));
        return {};
      }),
  );
}
