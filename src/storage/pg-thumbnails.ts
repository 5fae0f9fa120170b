/** File thumbnails (CONTRACT §15) on PostgreSQL: the {@link ThumbnailTable} part of the PostgreSQL metadata store. */
import { eq, inArray, sql } from "drizzle-orm";
import type { PgDb } from "./pg-metadata.ts";
import type { ThumbnailRow, ThumbnailTable } from "./ports.ts";
import { files, fileThumbnails } from "./pg-schema.ts";

/** Thumbnail rows on PostgreSQL, on the pool or inside a transaction (whichever `db` is). */
export class PgThumbnails implements ThumbnailTable {
  constructor(private readonly db: PgDb) {}

  async get(fileId: string): Promise<ThumbnailRow | undefined> {
    return (await this.db.select().from(fileThumbnails).where(eq(fileThumbnails.fileId, fileId)))[0];
  }

  async states(fileIds: readonly string[]): Promise<Map<string, Pick<ThumbnailRow, "ofBlob" | "source">>> {
    if (fileIds.length === 0) return new Map();
    const rows = await this.db.select({ fileId: fileThumbnails.fileId, ofBlob: fileThumbnails.ofBlob, source: fileThumbnails.source }).from(fileThumbnails).where(inArray(fileThumbnails.fileId, [...fileIds]));
    return new Map(rows.map((r) => [r.fileId, { ofBlob: r.ofBlob, source: r.source }]));
  }

  async put(row: ThumbnailRow): Promise<boolean> {
    const image = Buffer.from(row.image.buffer, row.image.byteOffset, row.image.byteLength);
    // One statement: the row goes in only while the file has that content. A delete of the file
    // that commits first leaves nothing to select; one that commits after removes the row with it.
    const stored = await this.db.execute(sql`INSERT INTO ${fileThumbnails} (file_id, of_blob, source, image, created_at)
      SELECT ${row.fileId}, ${row.ofBlob}, ${row.source}, ${image}, ${row.createdAt}
      WHERE EXISTS (SELECT 1 FROM ${files} WHERE id = ${row.fileId} AND blob = ${row.ofBlob} FOR KEY SHARE)
      ON CONFLICT (file_id) DO UPDATE SET of_blob = EXCLUDED.of_blob, source = EXCLUDED.source, image = EXCLUDED.image, created_at = EXCLUDED.created_at
      RETURNING 1`);
    return (stored as unknown as unknown[]).length > 0;
  }

  async delete(fileId: string): Promise<boolean> {
    return (await this.db.delete(fileThumbnails).where(eq(fileThumbnails.fileId, fileId)).returning({ fileId: fileThumbnails.fileId })).length > 0;
  }
}
