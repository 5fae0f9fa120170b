/**
 * How a REST route declares its inputs once: path parameters, query string and JSON body as
 * Elysia schemas (`t.*`), which Elysia validates before the handler runs and from which the
 * OpenAPI document is generated (http/openapi.ts).
 *
 * A field is {@link checked} (or {@link parsed} where the value changes): its JSON Schema (what
 * the document shows) paired with the domain parser that decides (domain/params.ts), so
 * validation, its message and the value the handler receives are the parser's, exactly as when
 * the handlers parsed by hand. The order of a request
 * stays: authentication (the route plugin's `derive`, Elysia's transform stage), then the strict
 * reading of the raw inputs ({@link strictQuery}, {@link jsonBody}: route transforms), then
 * validation, then the handler. A request that fails validation is 400 with code 3 and the
 * parser's message ({@link validationMessage}).
 */
import { Kind, TypeRegistry, type TSchema, type TUnsafe } from "@sinclair/typebox";
import { ValueErrorType } from "@sinclair/typebox/errors";
import { t, type ValidationError } from "elysia";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, parseFileId, parsePageSize, parsePageToken, parseQuery } from "../domain/params.ts";
import { ORDER_BY_VALUES, parseOrderBy } from "../domain/file-order.ts";
import { parseTtl } from "../domain/expiry.ts";
import { AppError } from "../errors.ts";
import { FILE_ID } from "./describe.ts";
import { readJsonObject } from "./json-body.ts";
import { PATTERNS } from "./openapi-schemas.ts";

/** Where a field's schema keeps its parser (a symbol: never part of the JSON document). */
const PARSE = Symbol("cubby.parse");
type Parser<T> = (raw: unknown) => T;
type ParsedSchema = TSchema & { [PARSE]: Parser<unknown> };

// The check of every declared field: the value is valid when its parser accepts it.
TypeRegistry.Set<ParsedSchema>("Parsed", (schema, value) => {
  try {
    schema[PARSE](value);
    return true;
  } catch {
    return false;
  }
});

/**
 * One input field whose parser only checks: `json` is its JSON Schema 2020-12 as the document
 * states it (type, pattern, maxLength, enum, description); `check` decides what is valid (it
 * throws AppError("invalid_argument") naming the field) and must return the value it was given,
 * which the handler receives as sent (typed `T`). `json` describes `check`;
 * test/integration/openapi.test.ts checks they agree on samples.
 */
export function checked<T>(json: Record<string, unknown>, check: Parser<T>): TUnsafe<T> {
  const schema = t.Unsafe<T>({ ...json, [Kind]: "Parsed" });
  (schema as unknown as ParsedSchema)[PARSE] = check;
  return schema;
}

/**
 * One input field whose parser makes another value (`"50"` → 50, a page token → a cursor): as
 * {@link checked}, and the handler receives `parse`'s result (a TypeBox Transform, which costs a
 * few microseconds a request more, so only where a value changes).
 */
export function parsed<T>(json: Record<string, unknown>, parse: Parser<T>) {
  return t
    .Transform(checked<unknown>(json, parse))
    .Decode((raw): T => parse(raw))
    .Encode((value) => value as unknown);
}

/** A parser of a boolean body field. @throws AppError invalid_argument naming the field */
export function booleanOf(name: string) {
  return (raw: unknown): boolean => {
    if (typeof raw !== "boolean") throw new AppError("invalid_argument", `${name}: true or false`);
    return raw;
  };
}

/**
 * A JSON body field that must be a string (`${name}: must be a string` otherwise), then
 * `check`ed (see {@link checked}: it returns the string it was given).
 */
export function bodyString<T extends string = string>(name: string, json: Record<string, unknown>, check: (raw: string) => T = (raw) => raw as T) {
  return checked({ type: "string", ...json }, (raw) => {
    if (typeof raw !== "string") throw new AppError("invalid_argument", `${name}: must be a string`);
    return check(raw);
  });
}

/**
 * An optional query parameter, as {@link strictQuery} decoded it, `check`ed (see
 * {@link checked}); absent stays undefined (the check is not asked).
 */
export function queryParam<T extends string>(json: Record<string, unknown>, check: (raw: string) => T) {
  return t.Optional(checked({ type: "string", ...json }, (raw) => check(raw as string)));
}

/** An optional query parameter `parse`d into another value (see {@link parsed}). */
export function queryParsed<T>(json: Record<string, unknown>, parse: (raw: string) => T) {
  return t.Optional(parsed({ type: "string", ...json }, (raw) => parse(raw as string)));
}

/**
 * A JSON body: an object with exactly these (optional) fields; another field is refused with
 * `body: unknown field "<name>"` (Elysia's app runs with `normalize: false`, so unknown fields
 * are seen, not dropped).
 */
export function closedBody<P extends Record<string, TSchema>>(properties: P, description?: string) {
  return t.Object(properties, { additionalProperties: false, ...(description === undefined ? {} : { description }) });
}

/**
 * The route options of a JSON body: the body is read by {@link readJsonObject} (415 unless
 * `application/json`, the size checked before a byte is read, UTF-8, an object) in the transform
 * stage, after the plugin's authentication, and then validated against `schema`. Elysia's own
 * body parsing is bypassed: its parse stage, which runs before authentication, only marks the body
 * as deferred.
 */
export function jsonBody<S extends TSchema>(schema: S, opts: { maxBytes: number; what: string; emptyIsObject?: boolean }) {
  return {
    body: schema,
    parse: deferBody,
    transform: async (context: { request: Request; body?: unknown }) => {
      context.body = await readJsonObject(context.request, opts);
    },
  };
}

/** Elysia's parse step of a JSON route: nothing read yet (see {@link jsonBody}). */
function deferBody(): Record<string, never> {
  return {};
}

/**
 * The route options of a query string: read by {@link parseQuery} (a malformed percent-escape,
 * bytes that are not UTF-8, or a declared parameter given twice are 400; undeclared ones are
 * ignored) in the transform stage, then validated against `properties`. The route's body, if any, is
 * raw (`parse: "none"`): it is the handler's to stream.
 */
export function strictQuery<P extends Record<string, TSchema>>(properties: P) {
  const names = Object.keys(properties);
  return {
    query: t.Object(properties),
    parse: "none" as const,
    transform: (context: { request: Request; query?: unknown }) => {
      context.query = Object.fromEntries(parseQuery(new URL(context.request.url).search, names));
    },
  };
}

/**
 * The message of a request Elysia refused on a schema: the failing field's parser's own (as the
 * handlers gave before the inputs were declared), `body: unknown field "<name>"`, or Elysia's
 * description of what failed for anything else.
 */
export function validationMessage(error: Pick<ValidationError, "type" | "valueError">): string {
  const failure = error.valueError;
  if (failure === undefined) return "malformed request";
  const parse = (failure.schema as Partial<ParsedSchema>)[PARSE];
  if (parse !== undefined) {
    try {
      parse(failure.value);
    } catch (err) {
      if (err instanceof AppError) return err.message;
    }
  }
  const field = failure.path.slice(1);
  if (failure.type === ValueErrorType.ObjectAdditionalProperties) return `${error.type}: unknown field "${field.slice(0, 40)}"`;
  return `${error.type}${field === "" ? "" : ` ${field}`}: ${failure.message}`;
}

// --- fields several routes declare ---------------------------------------------------------

/** `{id}` of /v1/files/{id}…: a file ID (a malformed one is 400). */
export const fileIdParams = t.Object({ id: checked({ ...FILE_ID, description: "File ID (a malformed one answers 400)" }, (raw) => parseFileId(raw as string)) });

/** The JSON Schema of `page_token`: opaque to the client. */
export const PAGE_TOKEN = { description: '`next_page_token` of the previous page; absent or "" for the first' };

/** `page_size` and `page_token` of a listing (CONTRACT §2). */
export const pagingQuery = {
  page_size: queryParsed({ type: "integer", minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE, description: "Items per page" }, parsePageSize),
  page_token: queryParsed(PAGE_TOKEN, parsePageToken),
};

/**
 * `order_by`, `page_size` and `page_token` of a file listing (CONTRACT §15, AIP-132). The token
 * stays text here: it is read with the order it continues (domain/file-order.ts parseFileToken).
 */
export const fileListQuery = {
  order_by: queryParsed(
    { enum: [...ORDER_BY_VALUES], default: "create_time desc", description: "The order: a field (create_time, name, size), ascending, or with ` desc` descending; names in code point order" },
    parseOrderBy,
  ),
  page_size: pagingQuery.page_size,
  page_token: queryParam(PAGE_TOKEN, (raw) => raw),
};

/** A time to live as sent (`7d`), checked by domain/expiry.ts; the expiry is computed later, with the clock. */
export const TTL = { pattern: PATTERNS.ttl, description: "`90s`, `15m`, `12h`, `7d`; at most ten years" };

/** `raw` when it is a time to live (domain/expiry.ts parseTtl). @throws AppError invalid_argument naming `ttl` */
export function keepTtl(raw: string): string {
  parseTtl(raw);
  return raw;
}

/** The expiry fields of a JSON body (`expire_time` or `ttl`), decided by domain/expiry.ts with the clock. */
export const expiryFields = {
  expire_time: t.Optional(bodyString("expire_time", { description: 'RFC 3339; "" clears (where clearing is allowed)' })),
  ttl: t.Optional(bodyString("ttl", TTL, keepTtl)),
};
