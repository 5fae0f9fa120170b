/**
 * `cubby users list | disable | enable | delete | set-quota | promote | demote` (CONTRACT §9, §15): the operator's
 * administration of users, over service/user-admin.ts. Results go to stdout (list) or one
 * line on stderr; bad input is an AppError invalid_argument or not_found, which main.ts prints
 * as one line with exit status 2.
 */
import type { Config } from "./config.ts";
import { formatTimestamp } from "./domain/time.ts";
import { parseEmail } from "./domain/params.ts";
import { parseSize } from "./domain/size.ts";
import { AppError } from "./errors.ts";
import { openServices } from "./service/index.ts";
import type { QuotaSetting, UserSummary } from "./service/user-admin.ts";

export const USERS_USAGE = `  cubby users list [--data-dir DIR]
  cubby users disable EMAIL | enable EMAIL [--data-dir DIR]
  cubby users delete EMAIL [--yes] [--data-dir DIR]
  cubby users set-quota EMAIL SIZE|none|default [--data-dir DIR]   (SIZE: bytes, 5G, 500MiB, 2TB)
  cubby users promote EMAIL | demote EMAIL [--data-dir DIR]   (administrators; ADMIN_EMAILS makes them too)`;

const usage = (message: string) => new AppError("invalid_argument", message);

/**
 * Runs one `users` subcommand, opening the stores with `opts.open` (main.ts: refused on a data
 * directory with no cubby data, CONTRACT §17).
 * @returns the exit status: 0 done; 2 for `delete` without `--yes` (nothing changed)
 * @throws AppError invalid_argument for bad arguments, not_found for an unknown e-mail
 */
export async function usersCommand(config: Config, sub: string | undefined, args: string[], opts: { yes: boolean; open: (config: Config) => ReturnType<typeof openServices> }): Promise<number> {
  const email = () => {
    const [raw, ...extra] = args;
    if (raw === undefined) throw usage(`users ${sub} needs the user's e-mail address`);
    if (extra.length > (sub === "set-quota" ? 1 : 0)) throw usage(`users ${sub} takes ${sub === "set-quota" ? "an e-mail and a quota" : "one e-mail"} (got "${extra.at(-1)}" too)`);
    return parseEmail(raw);
  };
  switch (sub) {
    case "list": {
      if (args.length > 0) throw usage(`users list takes no arguments (got "${args[0]}")`);
      await using services = await opts.open(config);
      console.log(["EMAIL", "FILES", "BYTES", "KEYS", "LAST SEEN", "STATUS", "QUOTA"].join("\t"));
      for await (const u of services.userAdmin.list()) {
        const bytes = u.reservedBytes === 0 ? String(u.fileBytes) : `${u.fileBytes} (+${u.reservedBytes} reserved)`;
        const seen = u.lastSeenAt === null ? "never" : formatTimestamp(u.lastSeenAt);
        const status = (u.disabledAt === null ? "enabled" : "disabled") + (u.admin ? ", admin" : "");
        console.log([u.email, u.files, bytes, u.keys, seen, status, quotaText(u)].join("\t"));
      }
      return 0;
    }
    case "disable":
    case "enable": {
      const target = email();
      await using services = await opts.open(config);
      const changed = await services.userAdmin.setDisabled(target, sub === "disable");
      const note = sub === "disable" ? "; their keys and sessions are refused from now on, their public files and share links stay served" : "";
      console.error(changed ? `${sub}d ${target}${note}` : `${target} was already ${sub}d`);
      return 0;
    }
    case "set-quota": {
      const target = email();
      const setting = parseQuota(args[1]);
      await using services = await opts.open(config);
      const u = await services.userAdmin.setQuota(target, setting);
      console.error(`quota of ${target}: ${quotaText(u)}; ${u.fileBytes + u.reservedBytes + u.davBytes} bytes used`);
      return 0;
    }
    case "promote":
    case "demote": {
      const target = email();
      await using services = await opts.open(config);
      const u = await services.userAdmin.setAdmin(target, sub === "promote");
      const still = sub === "demote" && u.admin ? " (still an administrator: ADMIN_EMAILS lists them)" : "";
      console.error(`${sub}d ${target}${still}`);
      return 0;
    }
    case "delete": {
      const target = email();
      await using services = await opts.open(config);
      if (!opts.yes) {
        const u = await services.userAdmin.describe(target);
        console.error(`cubby: users delete would delete ${target} and ${holdingsText(u)}; nothing was changed: run it again with --yes`);
        return 2;
      }
      const u = await services.userAdmin.delete(target);
      console.error(`deleted ${target} and ${holdingsText(u)}`);
      return 0;
    }
    default:
      throw usage(sub === undefined ? "users needs a subcommand: list, disable, enable, delete, set-quota, promote or demote" : `unknown users subcommand "${sub}"`);
  }
}

/** A size (bytes, or with a unit: domain/size.ts parseSize), `none` or `default`. @throws AppError invalid_argument */
function parseQuota(raw: string | undefined): QuotaSetting {
  if (raw === "none" || raw === "default") return raw;
  const bytes = raw === undefined ? undefined : parseSize(raw);
  if (bytes === undefined) {
    throw usage(`users set-quota takes a size (bytes, or with a unit such as 5G or 500MiB), none (no quota) or default (follow QUOTA_BYTES)${raw === undefined ? "" : ` (got "${raw}")`}`);
  }
  return bytes;
}

/** "1000", "1000 (QUOTA_BYTES)", "none" or "none (set for this user)". */
function quotaText(u: UserSummary): string {
  if (u.quotaSource === "none") return "none (set for this user)";
  if (u.quotaBytes === null) return "none";
  return u.quotaSource === "default" ? `${u.quotaBytes} (QUOTA_BYTES)` : String(u.quotaBytes);
}

function holdingsText(u: UserSummary): string {
  return (
    `${u.files} file(s) of ${u.fileBytes} bytes, ${u.keys} API key(s), ${u.sessions} session(s), ${u.shares} share link(s), ` +
    `${u.uploadLinks} upload link(s), ${u.unfinishedUploads} unfinished upload(s)`
  );
}
