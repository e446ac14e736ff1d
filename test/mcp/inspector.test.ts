import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAgentDirect } from '../../src/agent/agent.service';
import { createApp } from '../../src/server/app';
import { openStore } from '../../src/store/engine';
import { embedder, expectInvariants } from '../support/engines';
import { ROOT, TSX_CLI, childEnv } from './support';

/**
 * The MCP Inspector's own CLI (@modelcontextprotocol/inspector, a devDependency) against `retract mcp`
 * over stdio and against /mcp over Streamable HTTP: it lists every tool (an admin token opens all of
 * them) and reports 0 schema-portability findings (main answered 41 warnings over 5 tools: nullable
 * fields as ["string","null"], `value` with no type), and a tools/call with a plain numeric id works.
 */

const LAUNCHER = path.join(
  path.dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/inspector/package.json')),
  'clients/launcher/build/index.js',
);

function inspector(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [LAUNCHER, '--cli', '--connect-timeout', '120000', ...args], {
      cwd: ROOT,
      env: childEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

const ALL_TOOLS = [
  'add_observations',
  'as_of',
  'create_entities',
  'create_relations',
  'delete_entities',
  'delete_observations',
  'delete_relations',
  'explain_belief',
  'get_receipt',
  'get_reinstatement',
  'list_owed_reversals',
  'open_nodes',
  'preview_retraction',
  'propose_effect',
  'read_graph',
  'recall',
  'reinstate',
  'remember',
  'retract',
  'search_beliefs',
  'search_nodes',
  'why',
];

describe('the MCP Inspector CLI', { timeout: 240_000 }, () => {
  let dir: string;
  let token: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-mcp-insp-'));
    const s = await openStore({
      dataDir: dir,
      loadDataDir: new Blob([fs.readFileSync(inject('pgliteTemplate'))]),
      migrate: false,
    });
    token = (await createAgentDirect(s, { fleet: 'acme', name: 'admin', scopes: ['admin'] })).token;
    await s.close();
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const stdio = (method: string[]) =>
    inspector([
      '--cwd',
      ROOT,
      '-e',
      `RETRACT_TOKEN=${token}`,
      '-e',
      `RETRACT_DATA_DIR=${dir}`,
      ...method,
      '--',
      process.execPath,
      TSX_CLI,
      'src/cli/main.ts',
      'mcp',
    ]);

  it('over stdio: lists every tool with 0 portability findings (--strict), and calls one with a numeric id', async () => {
    const list = await stdio(['--method', 'tools/list', '--strict']);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stderr).not.toMatch(/Schema portability|Warning: tool|Error: tool/);
    const tools = JSON.parse(list.stdout).tools as Array<{ name: string; outputSchema?: unknown }>;
    expect(tools.map((t) => t.name).sort()).toEqual(ALL_TOOLS);
    expect(tools.every((t) => t.outputSchema)).toBe(true);
    // The same listing, counted without --strict: no summary line at all means no finding.
    const plain = await stdio(['--method', 'tools/list']);
    expect(plain.stderr).not.toMatch(/Schema portability/);

    const remembered = await stdio([
      '--method',
      'tools/call',
      '--tool-name',
      'remember',
      '--tool-arg',
      'claimKey=inspector/probe',
      'statement=The inspector was here',
      'evidence=cli',
      'value=42',
    ]);
    expect(remembered.code, remembered.stderr).toBe(0);
    const r = JSON.parse(remembered.stdout);
    expect(r.structuredContent).toMatchObject({
      outcome: 'ASSERTED',
      belief: { value: 42, statement: 'The inspector was here' },
    });
    const why = await stdio([
      '--method',
      'tools/call',
      '--tool-name',
      'why',
      '--tool-arg',
      `beliefId=${Number(r.structuredContent.belief.dbId)}`,
    ]);
    expect(JSON.parse(why.stdout).structuredContent.belief).toMatchObject({
      claimKey: 'inspector/probe',
      grounded: true,
    });
  });

  it('over Streamable HTTP with a bearer header: the same listing, 0 findings', async () => {
    const store = await openStore({ dataDir: dir, migrate: false });
    const app = await createApp({
      config: { port: 0, host: '127.0.0.1' },
      store,
      embedder,
      logger: pino({ level: 'silent' }),
    });
    await app.listen();
    try {
      const list = await inspector([
        `${app.url()}/mcp`,
        '--transport',
        'http',
        '--header',
        `Authorization: Bearer ${token}`,
        '--method',
        'tools/list',
        '--strict',
      ]);
      expect(list.code, list.stderr).toBe(0);
      expect(list.stderr).not.toMatch(/Schema portability|Warning: tool|Error: tool/);
      expect((JSON.parse(list.stdout).tools as Array<{ name: string }>).map((t) => t.name).sort()).toEqual(ALL_TOOLS);
      // The stdio run wrote a belief through remember.
      await expectInvariants(store);
    } finally {
      await app.close();
      await store.close();
    }
  });
});
