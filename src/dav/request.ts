/**
 * One WebDAV request as the method handlers see it: the caller, the path's segments, the locks
 * on the paths it touches (read by path, once each: the ancestors of a path and, where a change
 * needs them, the locks below it; never all the caller's locks), the If header (RFC 4918 §10.4)
 * and the checks a change makes before it happens: the locks it must honour (423) and the If
 * header's lists (412), each resource an If list names looked up once per request.
 */
import type { Principal } from "../domain/principal.ts";
import type { Clock } from "../domain/time.ts";
import type { Exchange } from "../serving/exchange.ts";
import type { FileService } from "../service/files.ts";
import type { FolderService } from "../service/folders.ts";
import type { Quotas } from "../service/quota.ts";
import type { DavLockRow, MetadataStore } from "../storage/ports.ts";
import { Slicer } from "../slices.ts";
import { DavError } from "./errors.ts";
import { parseIf, submittedTokens, type IfList } from "./if-header.ts";
import { MAX_IF_RESOURCES, overCap } from "./limits.ts";
import { ancestorsOf, assertUnlocked, covering, locksToHonour } from "./locks.ts";
import { isDavPath, lockPathOf, segmentsOf } from "./paths.ts";
import { resolve, type Resolved, type Resource } from "./resources.ts";

/** What the WebDAV handlers are given. */
export interface DavDeps {
  files: FileService;
  folders: FolderService;
  /** The metadata store: locks and dead properties (DavTable). */
  store: MetadataStore;
  /** The quota rules: dead properties and lock owners count (CONTRACT §14). */
  quotas: Quotas;
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
  /** Locks read, by path: at the path and its ancestors (`path`), or rooted below it (`path` + "\n"). */
  private readonly lockCache = new Map<string, Promise<DavLockRow[]>>();
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

  /**
   * The caller's live locks rooted at `path` or an ancestor (what can cover it) and, with
   * `below`, those rooted below it; each set read once per request through the (owner_id,
   * path) index (again after {@link forgetLocks}).
   */
  async locksAround(path: string, below = false): Promise<DavLockRow[]> {
    const owner = this.principal.userId;
    let around = this.lockCache.get(path);
    if (around === undefined) this.lockCache.set(path, (around = this.deps.store.dav.locksAt(owner, ancestorsOf(path), this.now())));
    if (!below) return around;
    let under = this.lockCache.get(`${path}\n`);
    if (under === undefined) this.lockCache.set(`${path}\n`, (under = this.deps.store.dav.locksBelow(owner, path, this.now())));
    return [...(await around), ...(await under)];
  }

  /** Drops the locks read, after a change of them. */
  forgetLocks(): void {
    this.lockCache.clear();
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
    const submitted = this.submitted();
    for (const t of targets) {
      const path = lockPathOf(t.segments);
      assertUnlocked(locksToHonour(await this.locksAround(path, t.kind === "membership"), path, t.kind), submitted);
    }
  }

  /**
   * Evaluates the If header (RFC 4918 §10.4): true when any list holds, a list holding when all
   * its conditions do; a state token holds when it is a lock covering the list's resource, an
   * entity tag when it is the resource's. No If header holds. Each resource the lists name is
   * looked up once (at most {@link MAX_IF_RESOURCES} of them), its locks read by path.
   * @param resource the request's resource as looked up already (undefined: none there)
   * @throws DavError 412 when no list holds; 400 past MAX_IF_RESOURCES
   */
  async checkIf(resource: Resource | undefined): Promise<void> {
    const lists = this.ifHeader();
    if (lists === undefined) return;
    const slicer = new Slicer();
    const states = new Map<string, Promise<{ tokens: Set<string>; etag: string | undefined } | undefined>>();
    const stateOf = (tag: string | undefined) => {
      let state = states.get(tag ?? "");
      if (state === undefined) {
        if (states.size >= MAX_IF_RESOURCES + 1) throw overCap(400, "the If header names too many resources", "MAX_IF_RESOURCES", MAX_IF_RESOURCES);
        states.set(tag ?? "", (state = this.ifState(tag, resource)));
      }
      return state;
    };
    for (const list of lists) {
      await slicer.breathe();
      const state = await stateOf(list.tag);
      if (state === undefined) continue;
      const holds = list.conditions.every((c) => {
        const met = c.token !== undefined ? state.tokens.has(c.token) : state.etag !== undefined && c.etag === state.etag;
        return c.not ? !met : met;
      });
      if (holds) return;
    }
    throw new DavError(412, "no list of the If header holds");
  }

  /** What an If list tagged `tag` (undefined: the request's resource) is evaluated against; undefined for a tag naming no resource here. */
  private async ifState(tag: string | undefined, resource: Resource | undefined): Promise<{ tokens: Set<string>; etag: string | undefined } | undefined> {
    let segments = this.segments;
    let target = resource;
    if (tag !== undefined) {
      const tagged = this.pathOfUri(tag);
      if (tagged === undefined) return undefined;
      segments = tagged;
      target = (await this.resolve(tagged)).resource;
    }
    const path = lockPathOf(segments);
    const tokens = new Set(covering(await this.locksAround(path), path).map((l) => l.token));
    return { tokens, etag: target === undefined ? undefined : etagOf(target) };
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
