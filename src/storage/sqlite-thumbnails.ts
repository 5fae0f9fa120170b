/** File thumbnails (CONTRACT §15) on SQLite: the {@link ThumbnailTable} part of the SQLite metadata store. */
import { and, eq, inArray, sql } from "drizzle-orm";
import type { Db, WriteRunner } from "./db.ts";
import type { ThumbnailRow, ThumbnailTable } from "./ports.ts";
import { files, fileThumbnails } from "./schema.ts";

/** Thumbnail rows on SQLite: reads on the given connection, writes through the store's write runner. */
export class SqliteThumbnails implements ThumbnailTable {
  constructor(
    private readonly db: Db,
    private readonly write: WriteRunner,
  ) {}

  async get(fileId: string): Promise<ThumbnailRow | undefined> {
    return this.db.select().from(fileThumbnails).where(eq(fileThumbnails.fileId, fileId)).get();
  }

  async states(fileIds: readonly string[]): Promise<Map<string, Pick<ThumbnailRow, "ofBlob" | "source">>> {
    if (fileIds.length === 0) return new Map();
    const rows = await this.db.select({ fileId: fileThumbnails.fileId, ofBlob: fileThumbnails.ofBlob, source: fileThumbnails.source }).from(fileThumbnails).where(inArray(fileThumbnails.fileId, [...fileIds])).all();
    return new Map(rows.map((r) => [r.fileId, { ofBlob: r.ofBlob, source: r.source }]));
  }

  put(row: ThumbnailRow): Promise<boolean> {
    const image = Buffer.from(row.image.buffer, row.image.byteOffset, row.image.byteLength);
    return this.write((db) => {
      // The check and the write are one step of the single writer: no delete can come between.
      const current = db.select({ id: files.id }).from(files).where(and(eq(files.id, row.fileId), eq(files.blob, row.ofBlob))).get();
      if (current === undefined) return false;
      db.insert(fileThumbnails)
        .values({ ...row, image })
        .onConflictDoUpdate({ target: fileThumbnails.fileId, set: { ofBlob: row.ofBlob, source: row.source, image, createdAt: row.createdAt } })
        .run();
      return true;
    });
  }

  delete(fileId: string): Promise<boolean> {
    return this.write((db) => db.delete(fileThumbnails).where(eq(fileThumbnails.fileId, fileId)).returning({ id: sql`1` }).all().length > 0);
  }
}
