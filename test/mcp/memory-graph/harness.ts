import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

/** The reference server's entry point, as `npx @modelcontextprotocol/server-memory` runs it. */
const REFERENCE_BIN = fileURLToPath(import.meta.resolve('@modelcontextprotocol/server-memory/dist/index.js'));

/** Spawns @modelcontextprotocol/server-memory over stdio with its MEMORY_FILE_PATH in a fresh temp dir, and connects the SDK's client. */
export async function referenceClient(): Promise<{ client: Client; file: string; close(): Promise<void> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'server-memory-'));
  const file = path.join(dir, 'memory.jsonl');
  const env: Record<string, string> = { MEMORY_FILE_PATH: file };
  for (const k of ['PATH', 'HOME', 'TMPDIR']) if (process.env[k]) env[k] = process.env[k]!;
  const client = new Client({ name: 'retract-test', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [REFERENCE_BIN], env, stderr: 'ignore' }),
  );
  return {
    client,
    file,
    close: async () => {
      await client.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
