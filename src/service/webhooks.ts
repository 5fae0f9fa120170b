/**
 * Webhooks (CONTRACT §13): a user's endpoints (create with a secret shown once, list, delete,
 * the log of recent attempts) and the events the other use cases record. An event is written to
 * the outbox by {@link WebhookService.record} inside the transaction of the change it reports,
 * fanned out there to each of the owner's webhooks subscribed to its type; the deliverer
 * (webhook-deliverer.ts) sends it later, at least once.
 */
import type { FolderRow } from "../domain/folder.ts";
import type { ShareRow } from "../domain/share.ts";
import { nanoid } from "nanoid";
import { AppError } from "../errors.ts";
import { toFileJson, type FileRecord } from "../domain/file.ts";
import { requireScope, type Principal } from "../domain/principal.ts";
import type { Clock } from "../domain/time.ts";
import {
  eventPayload,
  MAX_WEBHOOKS_PER_USER,
  parseStoredEvents,
  type EventType,
  type WebhookAttemptRow,
  type WebhookRow,
} from "../domain/webhook.ts";
import type { MetadataStore, MetadataTables } from "../storage/ports.ts";
import { PUBLIC_ONLY, type AllowedHosts } from "../domain/host-allowlist.ts";
import { checkTarget, systemResolve, type Resolve } from "./webhook-target.ts";

export interface WebhookServiceDeps {
  store: MetadataStore;
  clock: Clock;
  /** WEBHOOK_ALLOWED_HOSTS; public addresses only when absent. */
  allowedHosts?: AllowedHosts | undefined;
  /** The resolver the target check uses (the system's unless a test gives another). */
  resolve?: Resolve | undefined;
}

/** How many attempts a page of GET /v1/webhooks/{id}/deliveries lists unless `page_size` says. */
export const DELIVERY_PAGE_SIZE = 100;

/** A page of a webhook's attempts, newest first; `next`: where the next page starts (none: the last). */
export interface WebhookAttemptPage {
  attempts: WebhookAttemptRow[];
  next: number | undefined;
}

/** Why a file.deleted event happened. */
export type DeleteReason = "deleted" | "expired";

const notFound = () => new AppError("not_found", "webhook not found");

/**
 * Webhook endpoints and event recording. Managing webhooks needs files.read (events carry file
 * metadata) and, to create or delete one, files.write too.
 */
export class WebhookService {
  /** The public origin file URLs in events start with (HOSTNAME, or the server's own once it listens). */
  private baseUrl = "http://localhost";

  constructor(private readonly deps: WebhookServiceDeps) {}

  /** Sets the origin of the file URLs in events (no trailing slash). */
  setBaseUrl(url: string): void {
    this.baseUrl = url;
  }

  /** WEBHOOK_ALLOWED_HOSTS as the deliverer checks it. */
  get allowedHosts(): AllowedHosts {
    return this.deps.allowedHosts ?? PUBLIC_ONLY;
  }

  /** The resolver the target check uses. */
  get resolve(): Resolve {
    return this.deps.resolve ?? systemResolve;
  }

  /**
   * Creates a webhook for `url` receiving `events`, after checking its target (CONTRACT §13).
   * @returns the row, with the secret (shown this once)
   * @throws invalid_argument (the URL's scheme or target, too many webhooks); permission_denied
   */
  async create(principal: Principal, url: URL, events: EventType[]): Promise<WebhookRow> {
    requireScope(principal, "files.read");
    requireScope(principal, "files.write");
    await checkTarget(url, this.allowedHosts, this.resolve, { every: true });
    if ((await this.deps.store.webhooks.listByOwner(principal.userId)).length >= MAX_WEBHOOKS_PER_USER) {
      throw new AppError("invalid_argument", `at most ${MAX_WEBHOOKS_PER_USER} webhooks per user; delete one first`);
    }
    const secret = `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64")}`;
    const row: WebhookRow = { id: `wh_${nanoid(21)}`, ownerId: principal.userId, url: url.href, events: events.join(" "), secret, createdAt: this.deps.clock.nowMicros() };
    await this.deps.store.webhooks.insert(row);
    return row;
  }

  /** The caller's webhooks, oldest first. */
  async list(principal: Principal): Promise<WebhookRow[]> {
    requireScope(principal, "files.read");
    return this.deps.store.webhooks.listByOwner(principal.userId);
  }

  /** Deletes one of the caller's webhooks; its pending deliveries go with it. @throws not_found */
  async delete(principal: Principal, id: string): Promise<void> {
    requireScope(principal, "files.read");
    requireScope(principal, "files.write");
    if (!(await this.deps.store.webhooks.delete(id, principal.userId))) throw notFound();
  }

  /**
   * A page of the attempts of one of the caller's webhooks, newest first: up to `pageSize`
   * (1..1000) before the cursor `before` (an attempt's log position; undefined: the newest),
   * read through the index on (webhook_id, seq), keyset-paged.
   * @throws not_found
   */
  async attempts(principal: Principal, id: string, pageSize: number, before: number | undefined): Promise<WebhookAttemptPage> {
    requireScope(principal, "files.read");
    const hook = await this.deps.store.webhooks.byId(id);
    if (hook === undefined || hook.ownerId !== principal.userId) throw notFound();
    const rows = await this.deps.store.webhooks.attempts(id, pageSize + 1, before);
    const page = rows.slice(0, pageSize);
    return { attempts: page, next: rows.length > pageSize ? page[page.length - 1]!.seq : undefined };
  }

  /**
   * Records `file.created` (with the guest upload link's ID when it came through one) or
   * `file.updated` (content replaced) for `file`, in `tx`, the change's own transaction.
   */
  fileChanged(tx: MetadataTables, type: "file.created" | "file.updated", file: FileRecord): Promise<void> {
    const data = type === "file.created" ? { file: toFileJson(this.baseUrl, file), upload_link_id: file.uploadLinkId } : { file: toFileJson(this.baseUrl, file) };
    return this.record(tx, file.ownerId, type, file.id, data);
  }

  /** Records `file.deleted` for `file` (deleted by its owner, or by the expiry sweep), in `tx`. */
  fileDeleted(tx: MetadataTables, file: FileRecord, reason: DeleteReason): Promise<void> {
    return this.record(tx, file.ownerId, "file.deleted", file.id, { file: toFileJson(this.baseUrl, file), reason });
  }

  /** Records `share.downloaded` for a download through share `shareId` of `file`, in `tx`. */
  shareDownloaded(tx: MetadataTables, file: FileRecord, shareId: string): Promise<void> {
    return this.record(tx, file.ownerId, "share.downloaded", file.id, { share_id: shareId, file: toFileJson(this.baseUrl, file) });
  }

  /**
   * Records `folder.shared` (CONTRACT §12, §13) for a new share `shareId` of `folder`, in `tx`.
   * `data`: `{"share_id","folder":{"id","name","parent_id"}}`; the subject is the folder's ID.
   */
  folderShared(tx: MetadataTables, folder: FolderRow, shareId: string): Promise<void> {
    return this.record(tx, folder.ownerId, "folder.shared", folder.id, { share_id: shareId, folder: folderRef(folder) });
  }

  /**
   * Records `share.downloaded` for a download of a shared folder's ZIP through share `shareId`,
   * in `tx`: `data` is `{"share_id","folder":{"id","name","parent_id"}}`.
   */
  folderDownloaded(tx: MetadataTables, folder: FolderRow, shareId: string): Promise<void> {
    return this.record(tx, folder.ownerId, "share.downloaded", folder.id, { share_id: shareId, folder: folderRef(folder) });
  }

  /**
   * Records `share.downloaded` for a download of the ZIP of a share of several items (CONTRACT
   * §15) through `share`, in `tx`: `data` is `{"share_id","items":[{"file_id"}|{"folder_id"}]}`,
   * the items the ZIP held; the subject is the share's ID.
   */
  itemsDownloaded(tx: MetadataTables, share: ShareRow, items: { files: readonly FileRecord[]; folders: readonly FolderRow[] }): Promise<void> {
    const held = [...items.files.map((f) => ({ file_id: f.id })), ...items.folders.map((f) => ({ folder_id: f.id }))];
    return this.record(tx, share.ownerId, "share.downloaded", share.id, { share_id: share.id, items: held });
  }

  /**
   * Writes one event to the outbox for each of `ownerId`'s webhooks subscribed to `type`, in
   * `tx`: it commits with the change or not at all. `subject` orders events (a file ID).
   */
  private async record(tx: MetadataTables, ownerId: string, type: EventType, subject: string, data: unknown): Promise<void> {
    const hooks = (await tx.webhooks.listByOwner(ownerId)).filter((h) => parseStoredEvents(h.events).includes(type));
    if (hooks.length === 0) return;
    const now = this.deps.clock.nowMicros();
    const eventId = `evt_${nanoid(21)}`;
    const payload = eventPayload(type, now, data);
    await tx.webhooks.enqueue(hooks.map((h) => ({ eventId, webhookId: h.id, type, subject, payload, createdAt: now })));
  }
}

/** A folder as events name it: `{"id","name","parent_id"}` ("" at the top). */
function folderRef(folder: FolderRow): { id: string; name: string; parent_id: string } {
  return { id: folder.id, name: folder.name, parent_id: folder.parentId ?? "" };
}
