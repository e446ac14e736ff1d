import http from 'node:http';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { createEmbedder } from '../embedding/index';
import { type Store, openStoreFromEnv } from '../store/engine';
import { DataDirLockedError } from '../store/lock';
import { createMcpHttpHandler } from './http';
import { toolsFor } from './access';
import { authenticateReader, isMigrated, proveReadOnly, proveWriterBounds } from './reader';
import { type McpDeps, createMcpServer, noToolsReason } from './server';

/** An expected failure of `retract mcp`: reported as one line on stderr, with its exit status. */
export class McpStartError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
    this.name = 'McpStartError';
  }
}

type Env = Record<string, string | undefined>;
const say = (line: string) => process.stderr.write(`retract mcp: ${line}\n`);

/**
 * Opens the store the environment names for the MCP tools: PostgreSQL through DATABASE_URL, else
 * the embedded data directory (RETRACT_DATA_DIR, default ./.retract) when no other process holds it.
 * Never migrates. Checks the schema is there, proves the reader path cannot write, and checks the
 * bounds of the write tools' role.
 */
export async function openMcpStore(env: Env): Promise<{ store: Store; proof: string }> {
  let store: Store;
  try {
    store = await openStoreFromEnv(env as NodeJS.ProcessEnv, { migrate: false, poolSize: 4 });
  } catch (e) {
    if (e instanceof DataDirLockedError) {
      throw new McpStartError(
        `cannot open ${e.dir}: process ${e.pid} (a running RETRACT server?) holds it, and the embedded engine is single-process. ` +
          'Use that server\'s MCP endpoint instead: http://<host>:<port>/mcp with the header "Authorization: Bearer <token>" ' +
          '(see docs/walkthrough.md), or run RETRACT on PostgreSQL and set DATABASE_URL.',
        1,
      );
    }
    throw new McpStartError(`cannot open the store: ${(e as Error).message}`, 1);
  }
  try {
    if (!(await isMigrated(store))) {
      throw new McpStartError(
        `${store.description} holds no RETRACT schema (or an old one); run \`retract migrate\` first`,
        1,
      );
    }
    const proof = await proveReadOnly(store);
    const writable = await proveWriterBounds(store);
    return {
      store,
      proof:
        `read tools: read-only verified (a write was refused with SQLSTATE ${proof.refusedWith}; retract_reader holds no write privilege); ` +
        `write tools: as retract_mcp, which may write ${writable.length} tables and none of agents, agent_tokens, fleets, store_meta, effect_kinds`,
    };
  } catch (e) {
    await store.close().catch(() => {});
    if (e instanceof McpStartError) throw e;
    throw new McpStartError(`cannot serve the MCP tools from ${store.description}: ${(e as Error).message}`, 1);
  }
}

async function deps(store: Store, env: Env): Promise<McpDeps> {
  return {
    store,
    embedder: await createEmbedder(env as NodeJS.ProcessEnv),
    onUnexpected: (err, requestId, tool) =>
      say(`unexpected error in ${tool} (request id ${requestId}): ${(err as Error)?.stack ?? String(err)}`),
  };
}

/**
 * `retract mcp`: the MCP tools over stdio for the agent holding RETRACT_TOKEN (its scopes decide
 * which; one that opens none is refused). Stdout carries the protocol only; every message goes to
 * stderr. Resolves with the exit status when the client disconnects or a stop signal arrives.
 */
export async function runStdio(env: Env = process.env): Promise<number> {
  const token = env.RETRACT_TOKEN?.trim();
  if (!token)
    throw new McpStartError(
      'RETRACT_TOKEN is required: the bearer token of the agent the tools act for (its scopes decide which tools it gets)',
      2,
    );
  const { store, proof } = await openMcpStore(env);
  try {
    const agent = await authenticateReader(store, token);
    if (!agent) throw new McpStartError('RETRACT_TOKEN does not belong to any agent of this store', 2);
    if (toolsFor(agent).length === 0) throw new McpStartError(`${noToolsReason(agent)}; refusing to serve`, 2);
    const server = createMcpServer(await deps(store, env), agent);
    const transport = new StdioServerTransport();
    let inputEnded = false;
    const closed = new Promise<void>((resolve) => {
      transport.onclose = () => resolve();
      process.stdin.once('end', () => {
        inputEnded = true;
        resolve();
      });
      for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, () => resolve());
    });
    await server.connect(transport);
    const pending = countPending(transport);
    say(
      `serving ${toolsFor(agent).join(', ')} for agent ${agent.name} (fleet ${agent.fleet_id}) from ${store.description} over stdio; ${proof}`,
    );
    await closed;
    // Input ended (a piped session): answer what was already asked before closing.
    for (let waited = 0; inputEnded && pending() > 0 && waited < 30_000; waited += 20)
      await new Promise((r) => setTimeout(r, 20));
    await server.close().catch(() => {});
    return 0;
  } finally {
    await store.close().catch(() => {});
  }
}

/** Counts requests received and not yet answered on a transport (wraps its onmessage and send after connect). */
function countPending(transport: StdioServerTransport): () => number {
  let pending = 0;
  const onmessage = transport.onmessage;
  transport.onmessage = (msg: JSONRPCMessage) => {
    if ('method' in msg && 'id' in msg) pending++;
    onmessage?.(msg);
  };
  const send = transport.send.bind(transport);
  transport.send = async (msg: JSONRPCMessage) => {
    await send(msg);
    if ('id' in msg && ('result' in msg || 'error' in msg)) pending--;
  };
  return () => pending;
}

/**
 * `retract mcp --http PORT`: the MCP tools over Streamable HTTP at /mcp, standalone (using
 * the store directly, like stdio), every request authenticated by its bearer token. Serves until a
 * stop signal; resolves with the exit status.
 */
export async function runHttp(port: number, host: string, env: Env = process.env): Promise<number> {
  const { store, proof } = await openMcpStore(env);
  const handler = createMcpHttpHandler({
    ...(await deps(store, env)),
    maxBodyBytes: Number(env.RETRACT_MAX_BODY_BYTES ?? 1_048_576),
  });
  const server = http.createServer((req, res) => {
    const p = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (p === '/mcp') {
      handler(req, res).catch((e) => {
        say(`request failed: ${(e as Error)?.stack ?? String(e)}`);
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'internal error' }, id: null }));
      });
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: 'not found: the MCP tools are at /mcp' }));
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
  } catch (e) {
    await store.close().catch(() => {});
    throw new McpStartError(`cannot listen on ${host}:${port}: ${(e as Error).message}`, 1);
  }
  const a = server.address();
  const url =
    a && typeof a !== 'string' ? `http://${a.address.includes(':') ? `[${a.address}]` : a.address}:${a.port}/mcp` : '';
  say(`serving the MCP tools at ${url} from ${store.description}; ${proof}`);
  await new Promise<void>((resolve) => {
    for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, () => resolve());
  });
  await new Promise<void>((r) => {
    server.close(() => r());
    server.closeAllConnections();
  });
  await store.close().catch(() => {});
  return 0;
}
