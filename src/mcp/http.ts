import type http from 'node:http';
import type { AgentRow } from '../agent/agent.repository';
import { toolScopes, toolsFor } from './access';
import { authenticateReader } from './reader';
import type { McpDeps } from './toolkit';

export interface McpHttpOptions extends McpDeps {
  /** Largest request body accepted (413 above it). */
  maxBodyBytes?: number;
  /** Most JSON-RPC messages in one batch (413 above it), as GraphQL caps its batches: each tool call is a read transaction. */
  maxBatch?: number;
}

/** The token of an `Authorization: Bearer <token>` header, else null. */
function bearerToken(value: string | undefined): string | null {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(value ?? '');
  return m ? m[1]! : null;
}

/** A JSON-RPC error answered before any MCP processing (no id: the request was never read as one). */
function rpcError(
  res: http.ServerResponse,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** Reads a request body up to `max` bytes; null when it is larger (the caller answers 413). */
export async function readBody(req: http.IncomingMessage, max: number): Promise<Buffer | null> {
  if (Number(req.headers['content-length'] ?? 0) > max) return null;
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of req) {
    n += (c as Buffer).length;
    if (n > max) return null;
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

/**
 * The MCP SDK and the tool definitions with their zod schemas, loaded by the first request that gets
 * past authentication: `npm start` serves /mcp beside GraphQL, and they are over a megabyte of
 * bundled code that every start compiled whether or not an MCP client ever came.
 */
let tools:
  Promise<[typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js'), typeof import('./server')]> | undefined;
const loadTools = () =>
  (tools ??= Promise.all([import('@modelcontextprotocol/sdk/server/streamableHttp.js'), import('./server')]));

/**
 * The MCP tools over Streamable HTTP, stateless: each POST carries `Authorization: Bearer` and is
 * served by a fresh server and transport (JSON responses, no session), listing the tools that token's
 * scopes open. Missing or unknown tokens get 401, tokens that open no tool get 403, both with a
 * JSON-RPC error saying so;
 * GET and DELETE get 405 (there is no session stream to open or end).
 */
export function createMcpHttpHandler(
  opts: McpHttpOptions,
): (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void> {
  const max = opts.maxBodyBytes ?? 1_048_576;
  const maxBatch = opts.maxBatch ?? 5;
  return async (req, res) => {
    if (req.method !== 'POST') {
      return rpcError(res, 405, -32000, 'this MCP endpoint is stateless: send JSON-RPC requests with POST', {
        allow: 'POST',
      });
    }
    const token = bearerToken(req.headers.authorization);
    let agent: AgentRow | null = null;
    if (token) agent = await authenticateReader(opts.store, token);
    if (!agent) {
      return rpcError(
        res,
        401,
        -32001,
        token ? 'the bearer token is not valid' : 'a bearer token is required (Authorization: Bearer <token>)',
        {
          'www-authenticate': `Bearer realm="retract", scope="${toolScopes().join(' ')}"`,
        },
      );
    }
    if (toolsFor(agent).length === 0) {
      return rpcError(
        res,
        403,
        -32003,
        `agent ${agent.name} (fleet ${agent.fleet_id}) holds none of the scopes that open an MCP tool (${toolScopes().join(', ')})`,
        {
          'www-authenticate': `Bearer realm="retract", error="insufficient_scope", scope="${toolScopes().join(' ')}"`,
        },
      );
    }
    const body = await readBody(req, max);
    if (!body) return rpcError(res, 413, -32600, `request body exceeds ${max} bytes`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      return rpcError(res, 400, -32700, 'parse error: the body is not JSON');
    }
    if (Array.isArray(parsed) && parsed.length > maxBatch) {
      return rpcError(
        res,
        413,
        -32600,
        `a batch may hold at most ${maxBatch} JSON-RPC messages (RETRACT_MCP_MAX_BATCH); send the others in further requests`,
      );
    }
    const [{ StreamableHTTPServerTransport }, { createMcpServer }] = await loadTools();
    const server = createMcpServer(opts, agent);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close().catch(() => {});
      void server.close().catch(() => {});
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, parsed);
  };
}
