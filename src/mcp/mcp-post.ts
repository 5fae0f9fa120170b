/**
 * One `/mcp` POST (mcp-routes.ts has the route, its authentication and why it is stateless):
 * loaded on the first call, so that the SDK is in memory only on servers agents talk to.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import pkg from "../../package.json" with { type: "json" };
import type { RequestContext } from "../context/request-context.ts";
import type { Principal } from "../domain/principal.ts";
import { registerFileTools, type FileToolsDeps } from "./tools.ts";
import { MAX_MCP_REQUEST_BYTES } from "./upload-content.ts";

/** One JSON-RPC POST, answered by a server and transport made for it and closed after. */
export async function handleMcpPost(deps: FileToolsDeps, request: Request, caller: { principal: Principal; context: RequestContext }): Promise<Response> {
  const server = new McpServer({ name: "cubby", version: pkg.version });
  registerFileTools(server, deps, caller);
  const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true, maxRequestBodySize: MAX_MCP_REQUEST_BYTES });
  await server.connect(transport);
  try {
    // With JSON responses the promise settles once every response of the request is written.
    return await transport.handleRequest(request);
  } finally {
    await server.close();
  }
}
