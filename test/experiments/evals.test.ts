/**
 * The evidence scripts, run as child processes exactly as `npm run eval:reach` / `eval:concurrency`
 * run them: exit codes and the figures their JSON reports. reach_eval runs in full (it is small) on
 * PGlite, and on PostgreSQL too when RETRACT_TEST_DATABASE_URL is set; concurrency_eval needs
 * PostgreSQL and runs a few trials.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const tsx = path.join(root, 'node_modules/.bin/tsx');
const pgUrl = process.env.RETRACT_TEST_DATABASE_URL;

let tmp: string;
beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-evidence-'));
});
afterAll(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

function run(
  script: string,
  args: string[],
  extraEnv: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string; ms: number }> {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_NO_WARNINGS: '1', ...extraEnv };
  if (!extraEnv.DATABASE_URL) delete env.DATABASE_URL;
  const t0 = performance.now();
  return new Promise((resolve) => {
    execFile(
      tsx,
      [path.join(root, script), ...args],
      { cwd: root, env, timeout: 170_000, maxBuffer: 16 * 2 ** 20 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout, stderr, ms: performance.now() - t0 });
      },
    );
  });
}

interface ArmFigures {
  beliefsRestingOnPassport: number;
  beliefsStillActive: number;
  pendingAtRetraction: number;
  pendingStillRan: number;
  pendingCancelled: number;
  pendingMoneyMovedMinor: number;
  proposedAfterExecuted: number;
  executedAtRetraction: number;
  executedReached: number;
  executedMoneyReachedMinor: number;
  owedMinor: number;
  owedKeys: string[];
  unreachableMinor: number;
  unreachableKinds: string[];
  settledMinor: number;
  staleReads: number;
  told: string[];
}

type ReachDoc = {
  passed: boolean;
  arms: { retract: ArmFigures; control: ArmFigures };
  checks: Array<{ check: string; ok: boolean; inconclusive?: boolean; measured: unknown }>;
  invariantViolations: unknown[];
};

/**
 * The figures RETRACT must show and the control's measured ones. `sharedServer`: on a PostgreSQL
 * server other suites share, a long transaction in another database may hold the stream's
 * cluster-wide horizon past the wait; the eval then reports delivery INCONCLUSIVE and names it.
 */
function expectReachFigures(doc: ReachDoc, sharedServer = false) {
  expect(doc.passed).toBe(true);
  const delivery = doc.checks.find((c) => c.check.startsWith('every agent'))!;
  const held = sharedServer && !delivery.ok && delivery.inconclusive === true;
  if (held) expect(String(delivery.measured)).toContain('oldest open transaction in the cluster: database ');
  expect(doc.checks.filter((c) => c !== delivery).every((c) => c.ok)).toBe(true);
  expect(doc.invariantViolations).toEqual([]);
  const r = doc.arms.retract;
  expect(r).toMatchObject({
    beliefsRestingOnPassport: 3,
    beliefsStillActive: 0,
    pendingAtRetraction: 1,
    pendingCancelled: 1,
    pendingStillRan: 0,
    pendingMoneyMovedMinor: 0,
    proposedAfterExecuted: 0,
    executedAtRetraction: 2,
    executedReached: 2,
    executedMoneyReachedMinor: 132_900,
    owedMinor: 124_000,
    owedKeys: ['reversal:customer:4411:refund-1'],
    unreachableMinor: 8_900,
    unreachableKinds: ['card_charge'],
    settledMinor: 0,
    staleReads: 0,
  });
  if (!held) expect(r.told).toHaveLength(8);
  // The control arm's figures come from its own state: derived beliefs stand, the payout runs, nothing is reached.
  expect(doc.arms.control).toMatchObject({
    beliefsStillActive: 3,
    pendingStillRan: 1,
    pendingCancelled: 0,
    pendingMoneyMovedMinor: 50_000,
    proposedAfterExecuted: 1,
    executedReached: 0,
    executedMoneyReachedMinor: 0,
    owedMinor: 0,
    owedKeys: [],
    unreachableMinor: 0,
    settledMinor: 0,
    told: ['fraud-analyst'],
  });
}

// Child processes start tsx and a database each; on a loaded machine that takes a while.
describe.concurrent('evidence scripts', { timeout: 170_000 }, () => {
  it('reach_eval on PGlite: RETRACT reaches everything the passport held up; the control reaches nothing; exit 0', async () => {
    const out = path.join(tmp, 'reach-pglite.json');
    const r = await run('experiments/reach_eval.ts', ['--out', out]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('result: PASS');
    expect(r.stdout).toMatch(/beliefs resting on the passport still ACTIVE\s+0 of 3\s+3 of 3/);
    expect(r.stdout).toMatch(/pending effects that still ran\s+0 of 1 \(\$0\.00\)\s+1 of 1 \(\$500\.00\)/);
    expect(r.stdout).toMatch(/owed\s+\$1,240\.00 \(1 key\)\s+\$0\.00 \(0 keys\)/);
    const doc = JSON.parse(fs.readFileSync(out, 'utf8'));
    expect(doc.environment.engine.name).toBe('pglite');
    expectReachFigures(doc);
  });

  it.runIf(pgUrl)('reach_eval on PostgreSQL (DATABASE_URL): the same figures', async () => {
    const name = `retract_t_${process.pid}_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: pgUrl });
    await admin.connect();
    try {
      for (let i = 0; ; i++) {
        try {
          await admin.query(`CREATE DATABASE ${name} TEMPLATE ${inject('pgTemplate')}`);
          break;
        } catch (e) {
          if (i > 50 || (e as { code?: string }).code !== '55006') throw e;
          await new Promise((res) => setTimeout(res, 100 + Math.random() * 200));
        }
      }
      const u = new URL(pgUrl!);
      u.pathname = `/${name}`;
      const out = path.join(tmp, 'reach-pg.json');
      // The stream's horizon is cluster-wide: give delivery room when other suites hold transactions open.
      const r = await run('experiments/reach_eval.ts', ['--out', out, '--told-timeout-ms', '120000'], {
        DATABASE_URL: u.toString(),
      });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const doc = JSON.parse(fs.readFileSync(out, 'utf8'));
      expect(doc.environment.engine.name).toBe('postgres');
      expectReachFigures(doc, true);
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await admin.end();
    }
  });

  it.runIf(pgUrl)(
    'concurrency_eval --trials 5: three arms measured, arm A clean, exit 0, its database dropped',
    async () => {
      const out = path.join(tmp, 'concurrency.json');
      const r = await run(
        'experiments/concurrency_eval.ts',
        ['--trials', '5', '--attribution-rounds', '1', '--connections', '16', '--out', out],
        { DATABASE_URL: pgUrl! },
      );
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('arm A (the product): no anomaly');
      const doc = JSON.parse(fs.readFileSync(out, 'utf8'));
      expect(doc.environment.engine.name).toBe('postgres');
      expect(doc.productClean).toBe(true);
      const trials = fs
        .readFileSync(path.join(tmp, doc.trialsFile), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { arm: string; only: string | null });
      expect(trials).toHaveLength(3 * 5 + 3 * 4);
      for (const arm of ['A', 'B', 'C']) {
        const s = doc.summaries[arm];
        expect(s.trials).toBe(5);
        expect(s.anomalousRate.low).toBeLessThanOrEqual(s.anomalousRate.rate);
        expect(s.anomalousRate.high).toBeGreaterThanOrEqual(s.anomalousRate.rate);
        expect(trials.filter((t) => t.arm === arm && t.only === null)).toHaveLength(5);
        for (const g of ['fresh', 'existing', 'adjacent', 'derive']) expect(doc.attribution[arm][g].rounds).toBe(1);
      }
      expect(doc.summaries.A.anomalousTrials).toBe(0);
      expect(doc.summaries.A.errorsSurfaced).toEqual({});
      expect(doc.comparisons.map((c: { arms: string }) => c.arms)).toEqual(['A vs B', 'A vs C', 'B vs C']);
      const admin = new pg.Client({ connectionString: pgUrl });
      await admin.connect();
      const left = await admin.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [doc.parameters.database]);
      await admin.end();
      expect(left.rowCount).toBe(0);
    },
  );

  it.runIf(pgUrl)('concurrency_eval exits 3 on a bad --trials', async () => {
    const r = await run('experiments/concurrency_eval.ts', ['--trials', '0'], { DATABASE_URL: pgUrl! });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('--trials must be');
  });
});
