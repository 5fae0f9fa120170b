/**
 * Test support: checks HTTP responses against /openapi.json (generated from the routes by
 * src/http/openapi.ts), as the
 * server's response tap recorded them (src/server/response-tap.ts). A response is valid when
 * its method and path are an operation of the document, its status is declared for that
 * operation, it has the headers the status requires, its Content-Type is one the status
 * declares, and its JSON body validates against
 * the declared schema (ajv, JSON Schema 2020-12: OpenAPI 3.1's dialect). A request for a path
 * or method the document does not list must have been refused with a `google.rpc.Status` error;
 * what the document leaves out on purpose (OUT_OF_SCOPE_PATHS: the dashboard's static files,
 * `/metrics`, `/mcp`) is not checked.
 */
import fs from "node:fs";
import Ajv2020, { type ValidateFunction } from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { openApiDocument } from "../../src/http/app.ts";
import { OUT_OF_SCOPE_PATHS } from "../../src/http/openapi.ts";
import type { TappedResponse } from "../../src/server/response-tap.ts";

type Json = { [k: string]: unknown };
const DOC = openApiDocument() as unknown as Json & { paths: Record<string, Record<string, Json>>; components: { responses: Record<string, Json> } };
const DOC_ID = "https://cubby.invalid/openapi.json";

const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
addFormats(ajv);
ajv.addSchema({ ...structuredClone(DOC), $id: DOC_ID });
const compiled = new Map<string, ValidateFunction>();

/** The validator of the schema at `pointer` (a JSON pointer into the document). */
function validatorAt(pointer: string): ValidateFunction {
  let v = compiled.get(pointer);
  if (v === undefined) {
    v = ajv.compile({ $ref: `${DOC_ID}#${pointer}` });
    compiled.set(pointer, v);
  }
  return v;
}

const escapePointer = (s: string) => s.replaceAll("~", "~0").replaceAll("/", "~1");

/**
 * The pattern a path parameter's values have: its schema's `pattern` when an operation of the
 * path declares one (`/{id}` is 21 ID characters, so `/v1/usage` is not a content URL), else one
 * segment.
 */
function segmentPattern(template: string, name: string): string {
  for (const op of Object.values(DOC.paths[template]!)) {
    const param = ((op as { parameters?: { name: string; in: string; schema?: { pattern?: string } }[] }).parameters ?? []).find((p) => p.in === "path" && p.name === name);
    const pattern = param?.schema?.pattern;
    if (pattern !== undefined) return `(?:${pattern.replace(/^\^/, "").replace(/\$$/, "")})`;
  }
  return "[^/]+";
}

/**
 * The document's path templates as patterns, the most literal segments first (`/v1/files` before
 * `/{id}/{slug}`). A value that does not fit its parameter's pattern matches no operation: such a
 * request must have been refused like any unknown path.
 */
const TEMPLATES = Object.keys(DOC.paths)
  .map((template) => {
    const segments = template.split("/").slice(1);
    const part = (s: string) => (s.startsWith("{") ? segmentPattern(template, s.slice(1, -1)) : s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    const pattern = new RegExp(`^/${segments.map(part).join("/")}$`);
    return { template, pattern, literals: segments.filter((s) => !s.startsWith("{")).length };
  })
  .sort((a, b) => b.literals - a.literals);

/** The operation template of `method path`, or undefined when the document has none. */
export function operationOf(method: string, path: string): { template: string; method: string } | undefined {
  const m = method.toLowerCase();
  for (const t of TEMPLATES) {
    if (t.pattern.test(path) && DOC.paths[t.template]![m] !== undefined) return { template: t.template, method: m };
  }
  return undefined;
}

/** Whether `contentType` (a header value) is one of `declared` media ranges (`*\/*`, `text/*`, `application/json`). */
function mediaMatches(contentType: string, declared: string): boolean {
  const essence = contentType.split(";")[0]!.trim().toLowerCase();
  if (declared === "*/*") return true;
  if (declared.endsWith("/*")) return essence.startsWith(declared.slice(0, -1));
  return essence === declared;
}

/**
 * What is wrong with one recorded response, or undefined when it follows the document.
 */
export function problemOf(r: TappedResponse): string | undefined {
  const where = `${r.method} ${r.path} → ${r.status}`;
  if (OUT_OF_SCOPE_PATHS.has(r.path)) return undefined;
  const op = operationOf(r.method, r.path);
  if (op === undefined) {
    // Not an operation: must be a refusal with the contract's error body.
    if (r.status < 400) return `${where}: no such operation in the document, yet answered ${r.status}`;
    // An unknown path opened in a browser gets the 404 page instead (CONTRACT §11).
    if (r.status === 404 && r.contentType !== null && r.contentType.startsWith("text/html")) return undefined;
    const error = `Error${r.status}`;
    if (DOC.components.responses[error] === undefined) return `${where}: no such operation in the document, and ${r.status} is no error status of errors.ts`;
    return bodyProblem(r, `/components/responses/${error}/content/application~1json/schema`, where);
  }
  const responses = (DOC.paths[op.template]![op.method] as { responses: Record<string, Json> }).responses;
  let key = String(r.status);
  let response = responses[key];
  if (response === undefined) return `${where}: status ${r.status} is not declared for ${op.method.toUpperCase()} ${op.template}`;
  let pointer = `/paths/${escapePointer(op.template)}/${op.method}/responses/${key}`;
  if (typeof response.$ref === "string") {
    key = response.$ref.split("/").pop()!;
    response = DOC.components.responses[key]!;
    pointer = `/components/responses/${key}`;
  }
  const declaredHeaders = (response.headers ?? {}) as Record<string, { required?: boolean }>;
  const missing = Object.keys(declaredHeaders).filter((h) => declaredHeaders[h]!.required === true && !(r.headers ?? []).includes(h));
  if (missing.length > 0) return `${where}: without the required header(s) ${missing.join(", ")}`;
  const content = response.content as Record<string, { schema?: unknown }> | undefined;
  if (content === undefined) {
    if (r.bodyBytes > 0) return `${where}: ${r.bodyBytes} body bytes where ${op.method.toUpperCase()} ${op.template} declares no content`;
    return undefined;
  }
  if (r.contentType === null) {
    return r.bodyBytes > 0 ? `${where}: a body without Content-Type` : undefined;
  }
  const media = Object.keys(content).find((m) => mediaMatches(r.contentType!, m));
  if (media === undefined) return `${where}: Content-Type ${r.contentType} is not one of ${Object.keys(content).join(", ")}`;
  if (content[media]!.schema === undefined) return undefined;
  return bodyProblem(r, `${pointer}/content/${escapePointer(media)}/schema`, where);
}

/** Validates a recorded JSON body (when there is one to validate) against the schema at `pointer`. */
function bodyProblem(r: TappedResponse, pointer: string, where: string): string | undefined {
  if (r.body === undefined || !r.finished || r.method === "HEAD") return undefined;
  if (r.contentType === null || !/json/i.test(r.contentType)) return `${where}: ${r.contentType ?? "no Content-Type"} where JSON is declared`;
  let body: unknown;
  try {
    body = JSON.parse(r.body);
  } catch {
    return `${where}: body is not JSON: ${r.body.slice(0, 100)}`;
  }
  const validate = validatorAt(pointer);
  if (validate(body)) return undefined;
  return `${where}: body ${r.body.slice(0, 200)} does not match ${pointer}: ${ajv.errorsText(validate.errors)}`;
}

/**
 * The records of a response log, one {@link TappedResponse} per line. A last line without its
 * newline is left out: the server was killed while appending it (a write to a file stops at a
 * page boundary when SIGKILL arrives, so a large record can be cut; seen once in the archive test).
 */
export function readResponseLog(file: string): TappedResponse[] {
  const text = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "";
  const lines = text.split("\n");
  lines.pop(); // "" after the last newline, or the cut record
  return lines.filter((line) => line !== "").map((line) => JSON.parse(line) as TappedResponse);
}

/**
 * Reads a response log and returns every problem found, each once with how often it occurred.
 */
export function checkResponseLog(file: string): string[] {
  const problems = new Map<string, number>();
  for (const record of readResponseLog(file)) {
    const problem = problemOf(record);
    if (problem !== undefined) problems.set(problem, (problems.get(problem) ?? 0) + 1);
  }
  return [...problems].map(([p, n]) => (n === 1 ? p : `${p} (×${n})`));
}
