/**
 * Who is calling and what they may do. A principal is a signed-in user, by API key or dashboard
 * session; a key carries scopes (CONTRACT §8), a session has them all.
 */
import { AppError } from "../errors.ts";

/** The scopes of CONTRACT §8: reading files and their content, and changing anything. */
export const SCOPES = ["files.read", "files.write"] as const;
export type Scope = (typeof SCOPES)[number];

/** Every scope: sessions, and keys minted without a choice. */
export const ALL_SCOPES: ReadonlySet<Scope> = new Set(SCOPES);

/** Who is calling: a signed-in user (by API key or session), or nobody. */
export interface Principal {
  userId: string;
  /** How the caller proved who they are. */
  via: "api_key" | "session";
  /** What the caller may do. */
  scopes: ReadonlySet<Scope>;
}

/**
 * Scopes as stored and as listed: space-separated, in {@link SCOPES} order (like OAuth 2.0's
 * `scope`, RFC 6749 §3.3).
 */
export function formatScopes(scopes: Iterable<Scope>): string {
  const set = new Set(scopes);
  return SCOPES.filter((s) => set.has(s)).join(" ");
}

/**
 * Parses scope names (a list, or a stored space-separated string).
 * @throws AppError invalid_argument for an unknown scope or an empty list
 */
export function parseScopes(input: string | readonly string[]): Set<Scope> {
  const names = typeof input === "string" ? input.split(" ").filter((s) => s !== "") : input;
  const scopes = new Set<Scope>();
  for (const name of names) {
    if (!(SCOPES as readonly string[]).includes(name)) {
      throw new AppError("invalid_argument", `scopes: unknown scope "${name}" (expected ${SCOPES.join(", ")})`);
    }
    scopes.add(name as Scope);
  }
  if (scopes.size === 0) throw new AppError("invalid_argument", `scopes: name at least one of ${SCOPES.join(", ")}`);
  return scopes;
}

/**
 * Checks that `principal` holds `scope` (CONTRACT §8), on every transport alike.
 * @throws AppError permission_denied "this key lacks files.write"
 */
export function requireScope(principal: Principal, scope: Scope): void {
  if (!principal.scopes.has(scope)) throw new AppError("permission_denied", `this key lacks ${scope}`);
}
