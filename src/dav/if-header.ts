/**
 * The `If` request header (RFC 4918 §10.4): lists of conditions, each a state token (a lock
 * token, `<urn:uuid:…>`) or an entity tag (`["…"]`), either negated with `Not`; the lists either
 * all untagged (they apply to the request's resource) or each tagged with the resource they
 * apply to (`<http://host/dav/a>`).
 *
 * ```
 * If = ( 1*No-tag-list | 1*Tagged-list )
 * No-tag-list = List
 * Tagged-list = Resource-Tag 1*List
 * List = "(" 1*Condition ")"
 * Condition = ["Not"] (State-token | "[" entity-tag "]")
 * ```
 */
import { DavError } from "./errors.ts";
import { MAX_IF_CONDITIONS, MAX_IF_LISTS, overCap } from "./limits.ts";

/** One condition of a list. */
export interface IfCondition {
  not: boolean;
  /** A state token (a lock token, any URI). */
  token?: string;
  /** An entity tag, quotes included (`"abc"`, `W/"abc"`). */
  etag?: string;
}

/** One list: its conditions, all of which must hold, and the resource it is tagged with (undefined: the request's). */
export interface IfList {
  tag: string | undefined;
  conditions: IfCondition[];
}

/**
 * Parses an If header, in time linear in its length.
 * @throws DavError 400 for a header that does not follow the grammar, or past
 *   {@link MAX_IF_LISTS} lists or {@link MAX_IF_CONDITIONS} conditions
 */
export function parseIf(header: string): IfList[] {
  const lists: IfList[] = [];
  let i = 0;
  let tag: string | undefined;
  let tagged: boolean | undefined;
  let conditionCount = 0;
  const bad = (why: string) => new DavError(400, `malformed If header: ${why}`);
  const skip = () => {
    while (i < header.length && (header[i] === " " || header[i] === "\t")) i++;
  };
  const until = (close: string) => {
    const end = header.indexOf(close, i);
    if (end === -1) throw bad(`missing '${close}'`);
    const s = header.slice(i, end);
    i = end + 1;
    return s;
  };
  for (skip(); i < header.length; skip()) {
    const c = header[i];
    if (c === "<") {
      if (tagged === false) throw bad("a resource tag after untagged lists");
      tagged = true;
      i++;
      tag = until(">");
      skip();
      if (header[i] !== "(") throw bad("a resource tag without a list");
      continue;
    }
    if (c !== "(") throw bad(`unexpected '${c}'`);
    if (tagged === undefined) tagged = false;
    i++;
    const conditions: IfCondition[] = [];
    for (skip(); header[i] !== ")"; skip()) {
      if (i >= header.length) throw bad("missing ')'");
      let not = false;
      if (header.startsWith("Not", i) || header.startsWith("not", i) || header.startsWith("NOT", i)) {
        not = true;
        i += 3;
        skip();
      }
      if (++conditionCount > MAX_IF_CONDITIONS) throw overCap(400, "too many conditions in the If header", "MAX_IF_CONDITIONS", MAX_IF_CONDITIONS);
      if (header[i] === "<") {
        i++;
        conditions.push({ not, token: until(">") });
      } else if (header[i] === "[") {
        i++;
        conditions.push({ not, etag: until("]").trim() });
      } else throw bad("a condition is neither <state-token> nor [entity-tag]");
    }
    i++;
    if (conditions.length === 0) throw bad("an empty list");
    if (lists.length === MAX_IF_LISTS) throw overCap(400, "too many lists in the If header", "MAX_IF_LISTS", MAX_IF_LISTS);
    lists.push({ tag: tagged ? tag : undefined, conditions });
  }
  if (lists.length === 0) throw bad("no list");
  return lists;
}

/** Every state token the header names (RFC 4918 §10.4.1: a token named in If is submitted). */
export function submittedTokens(lists: readonly IfList[]): Set<string> {
  const out = new Set<string>();
  for (const l of lists) for (const c of l.conditions) if (c.token !== undefined) out.add(c.token);
  return out;
}
