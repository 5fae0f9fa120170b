/**
 * Query plans on the run's backend (CONTRACT §14: every list is read through an index that
 * serves it): SQLite's `EXPLAIN QUERY PLAN`, PostgreSQL's `EXPLAIN`, run on the server's own
 * metadata store from the test process.
 */
import { expect } from "bun:test";
import { BACKEND, runSql } from "./backend.ts";

/** A query's plan on the run's backend, as one line: SQLite's `EXPLAIN QUERY PLAN` details, or PostgreSQL's `EXPLAIN` lines. */
export async function planOf(dataDir: string, query: string, params: (string | number)[] = []): Promise<string> {
  if (BACKEND === "sqlite-disk") return (await runSql<{ detail: string }>(dataDir, `EXPLAIN QUERY PLAN ${query}`, ...params)).map((r) => r.detail).join(" | ");
  return (await runSql<{ "QUERY PLAN": string }>(dataDir, `EXPLAIN ${query}`, ...params)).map((r) => r["QUERY PLAN"].trim()).join(" | ");
}

/**
 * Expects each query to be a range of the index named beside it, in the index's order: on
 * SQLite `USING INDEX` it with no temporary B-tree (no sort); on PostgreSQL an `Index Scan` (or
 * `Index Scan Backward`) of it with no `Seq Scan` and no `Sort`.
 */
export async function expectIndexRanges(dataDir: string, cases: [query: string, index: string][]): Promise<void> {
  for (const [query, index] of cases) {
    const detail = await planOf(dataDir, query);
    if (BACKEND === "sqlite-disk") {
      expect({ query, detail }).toEqual({ query, detail: expect.stringContaining(`USING INDEX ${index}`) });
      expect({ query, detail }).toEqual({ query, detail: expect.not.stringContaining("TEMP B-TREE") });
    } else {
      expect({ query, detail }).toEqual({ query, detail: expect.stringMatching(new RegExp(`Index Scan( Backward)? using ${index}\\b`)) });
      expect({ query, detail }).toEqual({ query, detail: expect.not.stringMatching(/Seq Scan|Sort/) });
    }
  }
}
