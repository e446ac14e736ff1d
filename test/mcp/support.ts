import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** tsx's CLI: `node <tsxCli> src/cli/main.ts …` is what `npx tsx src/cli/main.ts …` runs, minus npx's start-up. */
export const TSX_CLI = createRequire(import.meta.url).resolve('tsx/cli');

/** Environment for a child: the parent's, minus anything that would pick another store or token. */
export function childEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (
      v === undefined ||
      /^(DATABASE_URL|RETRACT_ENGINE|RETRACT_DATA_DIR|RETRACT_TOKEN|RETRACT_BOOTSTRAP_TOKEN|NO_COLOR|FORCE_COLOR|PORT|HOST)$/.test(
        k,
      )
    )
      continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

export interface StdioSession {
  client: Client;
  stderr: () => string;
  close(): Promise<void>;
}

/** Spawns `retract mcp` over stdio with the given environment and connects the SDK's own client to it. */
export async function stdioClient(env: Record<string, string>): Promise<StdioSession> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [TSX_CLI, 'src/cli/main.ts', 'mcp'],
    cwd: ROOT,
    env: childEnv(env),
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const client = new Client({ name: 'retract-test', version: '1.0.0' });
  try {
    await client.connect(transport);
  } catch (e) {
    // Let the child's last words arrive before reporting.
    await new Promise((r) => setTimeout(r, 300));
    throw Object.assign(e as Error, { stderr: err });
  }
  return { client, stderr: () => err, close: () => client.close() };
}

/** The SDK's Streamable HTTP client against `url` (…/mcp), with a bearer token when given. */
export async function httpClient(url: string, token: string | null): Promise<Client> {
  const client = new Client({ name: 'retract-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(
      new URL(url),
      token ? { requestInit: { headers: { authorization: `Bearer ${token}` } } } : {},
    ),
  );
  return client;
}

/** Calls a tool; returns its structuredContent, or throws with the tool's error text. */
export async function call<T = any>(client: Client, name: string, args: Record<string, unknown> = {}): Promise<T> {
  const r = await client.callTool({ name, arguments: args });
  const text = (r.content as Array<{ type: string; text?: string }>)[0]?.text ?? '';
  if (r.isError) throw new Error(text);
  if (!text) throw new Error(`${name} returned no text content`);
  return r.structuredContent as T;
}

/** Calls a tool that must fail; returns its error text. */
export async function callError(client: Client, name: string, args: Record<string, unknown>): Promise<string> {
  const r = await client.callTool({ name, arguments: args });
  if (!r.isError)
    throw new Error(`${name} was expected to fail, returned ${JSON.stringify(r.structuredContent).slice(0, 200)}`);
  return (r.content as Array<{ text: string }>)[0]!.text;
}
