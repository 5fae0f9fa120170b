/**
 * What a route's `detail` says beside its declared inputs (http/inputs.ts): its summary, who may
 * call it, what it answers (the statuses, their bodies as `components` of http/openapi-schemas.ts
 * and their required headers) and the headers it reads itself (tus's, the upload checksums,
 * which answer 412 or 400 on their own terms, not a schema's). The generator
 * (@elysiajs/openapi, in http/openapi.ts) copies `detail` into the route's operation.
 */
import type { DocumentDecoration } from "elysia";
import { PATTERNS, ref, statusSchema, type Schema } from "./openapi-schemas.ts";

/** An OpenAPI 3.1 Response Object. */
export interface ResponseObject {
  description: string;
  headers?: Record<string, { description: string; schema: Schema; required?: boolean }>;
  content?: Record<string, { schema?: Schema }>;
}
export type Responses = Record<string, ResponseObject | { $ref: string }>;

/** An OpenAPI 3.1 Parameter Object. */
export interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required?: boolean;
  description?: string;
  schema: Schema;
}

/** An OpenAPI Security Requirement list: any one entry suffices; `{}` means anonymous. */
export type Security = Record<string, string[]>[];

/**
 * A route's `detail`: an OpenAPI 3.1 Operation Object without what the route's schemas declare
 * (path, query and JSON body). `parameters` lists only headers (and a page's own query);
 * `requestBody` a raw body, or the description of a declared JSON one.
 */
export interface Operation {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security?: Security;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; description?: string; content?: Record<string, { schema?: Schema }> };
  responses: Responses;
}

/** A JSON body of `schema` (OpenAPI media type map). */
export const json = (schema: Schema) => ({ "application/json": { schema } });
/** An HTML page (a person's answer). */
export const html = { "text/html": { schema: { type: "string" } } };
/** A response header that may be absent. */
export const header = (description: string, schema: Schema = { type: "string" }) => ({ description, schema });
/** A header the response always carries (test/support/openapi-check.ts checks it is there). */
export const always = (description: string, schema: Schema = { type: "string" }) => ({ description, schema, required: true });
export const LOCATION = { location: always("Where to go", { type: "string", format: "uri-reference" }) };

/** A 200 (or `status`) answer with a JSON body of component schema `name`. */
export const ok = (name: string, description = name, status = "200"): Responses => ({ [status]: { description, content: json(ref(name)) } });

/** References to the JSON error responses (`components.responses.Error<status>`) of `statuses`. */
export const errors = (...statuses: number[]): Responses =>
  Object.fromEntries(statuses.map((s) => [String(s), { $ref: `#/components/responses/Error${s}` }]));

/** Headers an error response with HTTP `status` carries (errors.ts errorHeaders). */
export function errorResponseHeaders(status: number): Pick<ResponseObject, "headers"> {
  if (status === 401) return { headers: { "www-authenticate": always("`Bearer realm=\"cubby\"`") } };
  if (status === 429) return { headers: { "retry-after": always("Seconds to wait", { type: "string", pattern: "^[0-9]+$" }) } };
  return {};
}

/**
 * Errors of a URL people open in a browser (CONTRACT §11): the JSON of §2 for a program, an HTML
 * page with the same status for a browser navigation (`Accept` with `text/html`).
 */
export const errorsOrPages = (...statuses: number[]): Responses =>
  Object.fromEntries(
    statuses.map((s) => [String(s), { description: `HTTP ${s}: \`google.rpc.Status\`; for a browser, an HTML page saying so`, ...errorResponseHeaders(s), content: { ...json(statusSchema(s)), ...html } }]),
  );

/** The same statuses as HTML pages for a person (sign-in, the guest upload page). */
export const htmlErrors = (...statuses: number[]): Responses =>
  Object.fromEntries(statuses.map((s) => [String(s), { description: "An HTML page saying what went wrong", content: html }]));

/** What any request can meet: the server failing (500) or out of room or time (503). */
export const SERVER = [500, 503];
/** What any authenticated request can meet besides: no valid credentials, a key without the scope, too many failures. */
export const AUTH = [401, 403, 429, ...SERVER];

/** An OpenAPI path parameter (always required). */
export const pathParam = (name: string, schema: Schema, description: string): Parameter => ({ name, in: "path", required: true, schema, description });
/** An OpenAPI query parameter, for routes whose query the handler reads itself (inputs.ts `queryParam` declares a validated one). */
export const queryParam = (name: string, schema: Schema, description: string): Parameter => ({ name, in: "query", schema, description });
/** An OpenAPI header parameter the handler reads itself. */
export const headerParam = (name: string, schema: Schema, description: string, required = false): Parameter => ({ name, in: "header", required, schema, description });

/** The checksum headers an upload may carry (domain/checksum.ts). */
export const checksums = [
  headerParam("x-goog-hash", { type: "string" }, "`crc32c=<base64>`: the upload is refused (400) and nothing stored unless the content matches"),
  headerParam("x-amz-checksum-crc32c", { type: "string" }, "`<base64>` CRC32C, as x-goog-hash"),
];
/** A raw upload's body, streamed to storage by the handler. */
export const rawContent = {
  description: "The raw content; its Content-Type becomes the file's `content_type` (absent: application/octet-stream)",
  content: { "*/*": {} },
};

/** OpenAPI security requirements: any one entry suffices; `{}` (or none at all) is anonymous. */
export const KEY_OR_SESSION: Security = [{ apiKey: [] }, { session: [] }];
export const SESSION: Security = [{ session: [] }];
export const ANYONE: Security = [];

/** The JSON Schema of a file ID, as a path parameter or a field. */
export const FILE_ID: Schema = { type: "string", pattern: PATTERNS.fileId };

/**
 * `detail` of a route: the Operation, typed for Elysia's `detail` option (whose type is
 * OpenAPI 3.0's; the document is 3.1, whose Schema Objects are JSON Schema 2020-12).
 */
export function detail(operation: Operation): DocumentDecoration {
  return operation as unknown as DocumentDecoration;
}
