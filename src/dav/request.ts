/**
 * One WebDAV request as the method handlers see it: the caller, the path's segments, the locks
 * of the caller's namespace (read once), the If header (RFC 4918 §10.4) and the checks a change
 * makes before it happens: the locks it must honour (423) and the If header's lists (412).
 */
import type { Principal } from "../domain/principal.ts";
import type { Clock } from "../domain/time.ts";
import type { Exchange } from "../serving/exchange.ts";
import type { FileService } from "../service/files.ts";
import type { FolderService } from "../service/folders.ts";
import type { DavLockRow, MetadataStore } from "../storage/ports.ts";
import { DavError } from "./errors.ts";
import { parseIf, submittedTokens, type IfList } from "./if-header.ts";
import { assertUnlocked, covering, locksToHonour } from "./locks.ts";
import { isDavPath, lockPathOf, segmentsOf } from "./paths.ts";
import { resolve, type Resolved, type Resource } from "./resources.ts";

/** What the WebDAV handlers are given. */
export interface DavDeps {
  files: FileService;
  folders: FolderService;
  /** The metadata store: locks and dead properties (DavTable). */
  store: MetadataStore;
  clock: Clock;
  /** Public origin (HOSTNAME), without a trailing slash. */
  baseUrl: () => string;
}

/** A change's target for the lock check: its path and how it changes (locks.ts locksToHonour). */
export interface ChangeTarget {
  segments: readonly string[];
  kind: "content" | "membership";
}

/** The request, for the method handlers (see the module comment). */
export class DavRequest {
  private lockList: DavLockRow[] | undefined;
  private ifLists: IfList[] | null | undefined;

  constructor(
    readonly deps: DavDeps,
    readonly ex: Exchange,
    readonly principal: Principal,
    readonly segments: string[],
  ) {}

  /** Now, Unix microseconds. */
  now(): number {
    return this.deps.clock.nowMicros();
  }

  /** Looks up `segments` (default: the request's own). */
  resolve(segments: string[] = this.segments): Promise<Resolved> {
    return resolve(this.deps, this.principal, segments);
  }

  /** The caller's live locks, read once per request (again after {@link forgetLocks}). */
  async locks(): Promise<DavLockRow[]> {
    this.lockList ??= await this.deps.store.dav.locks(this.principal.userId, this.now());
    return this.lockList;
  }

  /** Drops the locks read, after a change of them. */
  forgetLocks(): void {
    this.lockList = undefined;
  }

  /** The If header's lists; undefined when there is none. @throws DavError 400 when malformed */
  ifHeader(): IfList[] | undefined {
    if (this.ifLists === undefined) {
      const raw = this.ex.headers.get("if");
      this.ifLists = raw === null ? null : parseIf(raw);
    }
    return this.ifLists ?? undefined;
  }

  /** The lock tokens the request submits (named in its If header). */
  submitted(): Set<string> {
    return submittedTokens(this.ifHeader() ?? []);
  }

  /**
   * Checks a change before it is made: the If header holds (else 412, RFC 4918 §10.4.1: "all
   * state lists fail"), then every lock it must honour has its token submitted (else 423).
   */
  async checkChange(targets: readonly ChangeTarget[], resource: Resource | undefined): Promise<void> {
    await this.checkIf(resource);
    const locks = await this.locks();
    const submitted = this.submitted();
    for (const t of targets) assertUnlocked(locksToHonour(locks, lockPathOf(t.segments), t.kind), submitted);
  }

  /**
   * Evaluates the If header (RFC 4918 §10.4): true when any list holds, a list holding when all
   * its conditions do; a state token holds when it is a lock covering the list's resource, an
   * entity tag when it is the resource's. No If header holds.
   * @param resource the request's resource as looked up already (undefined: none there)
   * @throws DavError 412 when no list holds
   */
  async checkIf(resource: Resource | undefined): Promise<void> {
    const lists = this.ifHeader();
    if (lists === undefined) return;
    const locks = await this.locks();
    for (const list of lists) {
      let segments = this.segments;
      let target = resource;
      if (list.tag !== undefined) {
        const tagged = this.pathOfUri(list.tag);
        if (tagged === undefined) continue;
        segments = tagged;
        target = (await this.resolve(tagged)).resource;
      }
      const path = lockPathOf(segments);
      const tokens = new Set(covering(locks, path).map((l) => l.token));
      const etag = target === undefined ? undefined : etagOf(target);
      const holds = list.conditions.every((c) => {
        const met = c.token !== undefined ? tokens.has(c.token) : etag !== undefined && c.etag === etag;
        return c.not ? !met : met;
      });
      if (holds) return;
    }
    throw new DavError(412, "no list of the If header holds");
  }

  /**
   * The segments of a URI that names a resource of this server under /dav/ (absolute, or a
   * path); undefined when it names another host or another place.
   */
  pathOfUri(uri: string): string[] | undefined {
    let url: URL;
    try {
      url = new URL(uri, "http://placeholder.invalid");
    } catch {
      return undefined;
    }
    // The host the request came to, or HOSTNAME's: behind a proxy that passes `Host $host`, a
    // public port is gone from the first but not from the URLs a client builds from the second.
    if (url.hostname !== "placeholder.invalid" && url.host !== this.host() && url.host !== publicHost(this.deps.baseUrl())) return undefined;
    if (!isDavPath(url.pathname)) return undefined;
    try {
      return segmentsOf(url.pathname);
    } catch {
      return undefined;
    }
  }

  /** The authority the request was sent to (Host, or HTTP/2's :authority). */
  host(): string {
    return this.ex.headers.get("host") ?? this.ex.headers.get(":authority") ?? "";
  }
}

/** A resource's entity tag: a file's is its content URL's (`"{blob}"`: new content, new tag); collections have none. */
export function etagOf(r: Resource): string | undefined {
  return r.kind === "file" ? `"${r.file.blob}"` : undefined;
}

/** The host and port of a public origin (HOSTNAME), or "" when it is not a URL. */
function publicHost(baseUrl: string): string {
  try {
    return new URL(baseUrl).host;
  } catch {
    return "";
  }
}
