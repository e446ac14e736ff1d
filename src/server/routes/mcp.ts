import { type McpHttpOptions, createMcpHttpHandler } from '../../mcp/http';
import type { Route } from '../route';

/** /mcp: the MCP tools over Streamable HTTP (src/mcp/http.ts: its own auth, the reader role for reads). */
export function mcpRoute(opts: McpHttpOptions): Route {
  const mcp = createMcpHttpHandler(opts);
  return { matches: (pathname) => pathname === '/mcp', handle: (req, res) => mcp(req, res) };
}
