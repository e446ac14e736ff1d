import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import pg from 'pg';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { colorEnabled } from '../../src/cli/demo';
import { createApp } from '../../src/server/app';
import { openStore } from '../../src/store/engine';
import { embedder } from '../support/engines';
import { retract } from '../support/cli-run';
import { ROOT, TSX_CLI, childEnv } from '../mcp/support';

/**
 * The `retract` command line, end to end: each command runs as a child process (node + tsx, as the
 * bin does), and the test looks only at what a user sees: exit status, stdout, stderr.
 */

const temps: string[] = [];
function tempDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-cli-'));
  temps.push(d);
  return d;
}
afterAll(() => {
  for (const d of temps) fs.rmSync(d, { recursive: true, force: true });
});

// Child processes start tsx and PGlite: generous limits for a loaded machine (the whole file takes ~20 s CPU).
describe('retract CLI', { timeout: 240_000 }, () => {
  it.concurrent('--help on every command explains it and exits 0', async () => {
    const commands = [
      [],
      ['serve'],
      ['migrate'],
      ['demo'],
      ['agent'],
      ['agent', 'create'],
      ['eval'],
      ['worker'],
      ['mcp'],
      ['bench'],
    ];
    const runs = await Promise.all(commands.map((c) => retract([...c, '--help'])));
    for (const [i, c] of commands.entries()) {
      const r = runs[i]!;
      expect(r.code, c.join(' ')).toBe(0);
      expect(r.stdout).toContain(`Usage: retract${c.length ? ` ${c.join(' ')}` : ''}`);
      expect(r.stderr).toBe('');
    }
    const [top, serve, , demo, , create, evalHelp, worker, mcp, bench] = runs.map((r) => r.stdout);
    for (const name of ['serve', 'migrate', 'demo', 'agent', 'eval', 'worker', 'mcp', 'bench'])
      expect(top).toContain(`  ${name}`);
    expect(serve).toContain('--port <port>');
    expect(demo).toContain('--no-color');
    expect(create).toMatch(/--name <name>[\s\S]*--scopes <scopes>[\s\S]*--fleet <fleet>/);
    expect(evalHelp).toMatch(/"reach", "adjudicator", "identity",\s+"concurrency"/);
    expect(worker).toMatch(/executor[\s\S]*dispatcher/);
    expect(mcp).toMatch(
      /--http <port>[\s\S]*get_receipt, get_reinstatement, explain_belief, list_owed_reversals, search_beliefs/,
    );
    expect(bench).toContain('experiments/bench/main.ts');
  });

  it.concurrent('bad flags and arguments: a one-line reason on stderr, exit 2', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['migrate', '--bogus'], /^error: unknown option '--bogus'$/],
      [['agent', 'create', '--name', 'x'], /^error: required option '--scopes <scopes>' not specified$/],
      [
        ['eval', 'nonsense'],
        /^error: command-argument value 'nonsense' is invalid for argument 'name'\. Allowed choices are reach, adjudicator, identity, concurrency\.$/,
      ],
      [
        ['mcp', '--http', 'eighty'],
        /^error: option '--http <port>' argument 'eighty' is invalid\. expected a port number from 0 to 65535$/,
      ],
      [['serve', '--port', '70000'], /^error: option '--port <port>' argument '70000' is invalid/],
      [['frobnicate'], /^error: unknown command 'frobnicate'$/],
    ];
    const runs = await Promise.all(cases.map(([args]) => retract(args)));
    for (const [i, [args, re]] of cases.entries()) {
      const r = runs[i]!;
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.trim(), args.join(' ')).toMatch(re);
      expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
      expect(r.stdout).toBe('');
    }
  });

  it.concurrent("eval and worker pass their script's exit status through", async () => {
    const [evalRun, worker] = await Promise.all([
      retract(['eval', 'identity', '--pairs', '/nonexistent/pairs.json']),
      retract(['worker', 'executor']),
    ]);
    // identity_eval exits 3 on unreadable data; its own message says why.
    expect(evalRun.code).toBe(3);
    expect(evalRun.stderr).toMatch(/identity_eval: .*ENOENT.*\/nonexistent\/pairs\.json/);
    // The executor's configuration error: exit 2, naming the missing variable.
    expect(worker.code).toBe(2);
    expect(worker.stderr).toMatch(/RETRACT_EXECUTOR_TOKEN is required/);
  });

  it.concurrent(
    'migrate on a fresh data directory, again (up to date), then agent create prints a token that authenticates',
    async () => {
      const dir = path.join(tempDir(), 'store');
      const first = await retract(['migrate', '--data-dir', dir]);
      expect(first.code, first.stderr).toBe(0);
      expect(first.stdout).toMatch(
        /^migrated pglite .*store: applied 0001_core, 0002_dispatch(, \S+)* \(\d+ migrations in all\)\n$/,
      );
      const again = await retract(['migrate'], { RETRACT_DATA_DIR: dir });
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/is up to date \(\d+ migrations applied\)/);

      const created = await retract([
        'agent',
        'create',
        '--data-dir',
        dir,
        '--name',
        'refunds',
        '--scopes',
        'beliefs:read, receipts:read',
        '--fleet',
        'acme',
      ]);
      expect(created.code, created.stderr).toBe(0);
      const token = created.stdout.trim();
      expect(token).toMatch(/^rt_[A-Za-z0-9_-]{40,}$/);
      expect(created.stderr).toMatch(
        /created agent refunds \(id \d+\) in fleet acme; scopes: beliefs:read, receipts:read/,
      );
      expect(created.stderr).toMatch(/shown once/);
      const dup = await retract([
        'agent',
        'create',
        '--data-dir',
        dir,
        '--name',
        'refunds',
        '--scopes',
        'beliefs:read',
        '--fleet',
        'acme',
      ]);
      expect(dup.code).toBe(2);
      expect(dup.stderr.trim()).toBe('retract: name: an agent named "refunds" already exists in fleet acme');

      // The token works against a server on that store; while it runs, the directory is held.
      const store = await openStore({ dataDir: dir, migrate: false });
      const app = await createApp({
        config: { port: 0, host: '127.0.0.1' },
        store,
        embedder,
        logger: pino({ level: 'silent' }),
      });
      try {
        await app.listen();
        const res = await fetch(`${app.url()}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ query: '{ viewer { name fleet scopes } }' }),
        });
        expect(await res.json()).toEqual({
          data: { viewer: { name: 'refunds', fleet: 'acme', scopes: ['beliefs:read', 'receipts:read'] } },
        });
        const locked = await retract([
          'agent',
          'create',
          '--data-dir',
          dir,
          '--name',
          'late',
          '--scopes',
          'beliefs:read',
        ]);
        expect(locked.code).toBe(1);
        expect(locked.stderr.trim()).toMatch(
          /^retract: The data directory .* is in use by process \d+\. PGlite is a single-process engine/,
        );
        expect(locked.stderr.trim().split('\n')).toHaveLength(1);
      } finally {
        await app.close();
        await store.close();
      }
    },
  );

  it.runIf(!!process.env.RETRACT_TEST_DATABASE_URL).concurrent('migrate on an empty PostgreSQL database', async () => {
    const base = process.env.RETRACT_TEST_DATABASE_URL!;
    const name = `retract_cli_${process.pid}_${Date.now()}`;
    const admin = new pg.Client({ connectionString: base });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    try {
      const u = new URL(base);
      u.pathname = `/${name}`;
      const r = await retract(['migrate', '--database-url', u.toString()]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^migrated postgres .*/${name}: applied 0001_core, 0002_dispatch`));
      const again = await retract(['migrate'], { DATABASE_URL: u.toString() });
      expect(again.stdout).toMatch(/is up to date/);
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  });

  it.concurrent('serve: answers /health, /graphql and /mcp, and stops cleanly on SIGTERM', async () => {
    const dir = path.join(tempDir(), 'store');
    const bootstrap = 'cli-test-bootstrap-token-0123456789';
    const child = spawn(process.execPath, [TSX_CLI, 'src/cli/main.ts', 'serve', '--port', '0', '--data-dir', dir], {
      cwd: ROOT,
      env: childEnv({ RETRACT_BOOTSTRAP_TOKEN: bootstrap, LOG_LEVEL: 'info' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`serve did not start: ${stderr}`)), 200_000);
      child.stderr.on('data', (d) => {
        stderr += d;
        const m = /"url":"(http:\/\/[^"]+)\/graphql"/.exec(stderr);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      expect(await (await fetch(`${url}/health`)).json()).toMatchObject({ status: 'ok', engine: 'pglite' });
      const gql = await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${bootstrap}` },
        body: JSON.stringify({ query: '{ viewer { name } }' }),
      });
      expect(await gql.json()).toEqual({ data: { viewer: { name: 'bootstrap' } } });
      const init = {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '1' } },
      };
      const mcp = await fetch(`${url}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${bootstrap}`,
        },
        body: JSON.stringify(init),
      });
      expect(mcp.status).toBe(200);
      expect(await mcp.json()).toMatchObject({ id: 1, result: { serverInfo: { name: 'retract' } } });
      const anon = await fetch(`${url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(init),
      });
      expect(anon.status).toBe(401);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });

  it.concurrent(
    'demo: the passport story through the API, plain text when piped, the receipt figures, exit 0',
    async () => {
      const r = await retract(['demo']);
      expect(r.code, r.stderr).toBe(0);
      const out = r.stdout;
      expect(out).not.toMatch(/\x1b\[/); // piped: no colour codes
      for (const name of ['doc-check', 'kyc', 'refunds', 'billing', 'payouts', 'executor', 'forensics', 'auditor'])
        expect(out).toMatch(new RegExp(`^    ${name} `, 'm'));
      expect(out).toMatch(/READ\s+search "is the passport of customer 4411 authentic\?"/);
      expect(out).toMatch(/THINK/);
      expect(out).toMatch(
        /COMMIT assertBelief identity\.verified = true derivedFrom \[passport\.authentic\] basedOn <snapshot>/,
      );
      expect(out).toMatch(/refund \$1,240\.00 EXECUTING; completeEffect .* → EXECUTED/);
      expect(out).toMatch(/card_charge \$89\.00 EXECUTING; completeEffect .* → EXECUTED/);
      expect(out).toMatch(/payout \$500\.00 stays PENDING/);
      expect(out).toMatch(/→ ContradictionRaised/);
      expect(out).toMatch(/adjudicateContradiction → ACCEPT_PROPOSED/);
      // The cascade, depth by depth, in the order it streamed.
      const order = [
        'RetractionStarted',
        'BeliefRetracted d=0',
        'BeliefRetracted d=1',
        'BeliefRetracted d=2',
        'EffectCancelled',
        'ReversalRecorded',
        'RetractionCommitted',
      ];
      const at = order.map((s) => out.indexOf(s));
      expect(at.every((i) => i > 0)).toBe(true);
      expect([...at].sort((a, b) => a - b)).toEqual(at);
      expect(out).toMatch(/│ exposure\s+│ \$1,329\.00 │/);
      expect(out).toMatch(/│ owed\s+│ \$1,240\.00 │/);
      expect(out).toMatch(/│ unreachable │\s+\$89\.00 │/);
      expect(out).toMatch(/│ settled\s+│\s+\$0\.00 │/);
      expect(out).toContain('$1,240.00 owed / $89.00 unreachable / $0.00 settled');
      expect(out).toContain('4 beliefs retracted, 1 effect cancelled, 2 executed effects reached');
      expect(out).toContain('(0 survivors), cancel 1 pending effect, reach 2 executed ones');
      expect(out).toContain('every invariant holds');
    },
  );

  it.concurrent('demo never writes over an existing store', async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'something'), 'x');
    const r = await retract(['demo', '--data-dir', dir]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toMatch(
      /^retract: --data-dir .* is not empty; the demo writes only into a new or empty directory/,
    );
  });

  it('colour: flags win, then NO_COLOR, then FORCE_COLOR, then a terminal', () => {
    expect(colorEnabled(undefined, {}, false)).toBe(false);
    expect(colorEnabled(undefined, {}, true)).toBe(true);
    expect(colorEnabled(undefined, { TERM: 'dumb' }, true)).toBe(false);
    expect(colorEnabled(undefined, { NO_COLOR: '1' }, true)).toBe(false);
    expect(colorEnabled(undefined, { FORCE_COLOR: '1' }, false)).toBe(true);
    expect(colorEnabled(undefined, { FORCE_COLOR: '0' }, true)).toBe(true);
    expect(colorEnabled(undefined, { FORCE_COLOR: '0' }, false)).toBe(false);
    expect(colorEnabled(false, { FORCE_COLOR: '1' }, true)).toBe(false);
    expect(colorEnabled(true, { NO_COLOR: '1' }, false)).toBe(true);
  });
});
