/** A cache for read paths that is never stale: see {@link ReadCache}. */
import type { MetadataStore } from "../storage/ports.ts";

/**
 * Values from the metadata store kept with the store's version ({@link MetadataStore.version})
 * they were read under, and given back only while that version holds. At most `capacity`
 * entries; the oldest goes first.
 */
export class ReadCache<V> {
  private readonly entries = new Map<string, { value: V; version: number | string }>();

  constructor(
    private readonly store: Pick<MetadataStore, "version" | "sharedVersion">,
    private readonly capacity: number,
  ) {}

  /**
   * The cached value for `key` while nothing has committed since it was read, without waiting:
   * `{ value }` on a hit, undefined when the value would have to be loaded.
   */
  peek(key: string): { value: V } | undefined {
    // A store whose version must be read from it (PostgreSQL) cannot be trusted without waiting.
    if (this.store.sharedVersion !== undefined) return undefined;
    const hit = this.entries.get(key);
    return hit !== undefined && hit.version === this.store.version() ? hit : undefined;
  }

  /** The value for `key`: cached while nothing has committed, else `load()`ed again. */
  async get(key: string, load: () => Promise<V>): Promise<V> {
    // The version is taken before the lookup: a commit racing the lookup leaves the entry
    // stamped with the older version, so it is reloaded next time rather than kept stale.
    const version = this.store.sharedVersion === undefined ? this.store.version() : await this.store.sharedVersion();
    const hit = this.entries.get(key);
    if (hit !== undefined && hit.version === version) return hit.value;
    const value = await load();
    if (hit === undefined && this.entries.size >= this.capacity) {
      this.entries.delete(this.entries.keys().next().value!);
    }
    this.entries.set(key, { value, version });
    return value;
  }
}
