/** Test helper for parsers: the value, or the AppError code it threw; any other exception propagates. */
import { AppError } from "../../src/errors.ts";

/** Loosely typed on purpose, so table rows of any value type compare with one `toEqual`. */
export function outcome(parse: () => unknown): { ok: unknown } | { error: string } {
  try {
    return { ok: parse() };
  } catch (e) {
    if (e instanceof AppError) return { error: e.code };
    throw e;
  }
}
