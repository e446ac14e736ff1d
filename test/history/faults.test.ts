import fs from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentDirect } from '../../src/agent/agent.service';
import { SCOPES } from '../../src/agent/scopes';
import { checkInvariants } from '../../src/invariants/check';
import { openStore } from '../../src/store/engine';
import { startBuilt, type BuiltServer } from '../support/built-server';
import { committedOrder, rawId, retractOp, runClients, Subscriber, type Recorded, type Shared } from './clients';
import { createCluster, postgresAvailable, type Cluster } from './cluster';
import { collect } from './collect';
import { check, type Anomaly } from './elle';
import { seedTree } from './seed';

/**
 * Concurrent clients over the real GraphQL API of the built server, on a throwaway PostgreSQL cluster of this
 * run's own, while a fault hits: the server killed -9 mid-cascade and restarted, the cluster's postmaster killed
 * -9 mid-retraction and restarted, the connection slots and the server's pool used up. After each, the history
 * the clients recorded and what the database holds go to the checker (test/history/elle.ts): no anomaly,
 * nothing lost, every receipt equal to its rows, and the invariants hold. Sizes come from the environment
 * (`npm run test:faults -- --minutes N` repeats the drills for N minutes).
 */
const CLIENTS = Number(process.env.RETRACT_HISTORY_CLIENTS ?? 6);
const OPS = Number(process.env.RETRACT_HISTORY_OPS ?? 25);
const TREE = Number(process.env.RETRACT_HISTORY_TREE ?? 3_000);
const MINUTES = Number(process.env.RETRACT_FAULTS_MINUTES ?? 0);
const SEED = Number(process.env.RETRACT_HISTORY_SEED ?? Date.now() % 100_000);
const START = Buffer.from('e1:0:0:-1').toString('base64url');
const TOKEN = 'history-operator-token-0123456789';

type Fault = 'none' | 'server-kill' | 'postmaster-kill' | 'pool';

interface Totals {
  runs: number;
  operations: number;
  byOutcome: Record<string, number>;
  faults: Record<string, number>;
  cascadesCommitted: number;
  cascadesAbsent: number;
  anomalies: Anomaly[];
  lost: number;
  violations: number;
}

describe.runIf(!!process.env.RETRACT_TEST_DATABASE_URL && postgresAvailable())(
  'histories under faults, on a throwaway PostgreSQL cluster',
  () => {
    let cluster: Cluster;
    let server: BuiltServer;
    let base = '';
    const totals: Totals = {
      runs: 0,
      operations: 0,
      byOutcome: {},
      faults: {},
      cascadesCommitted: 0,
      cascadesAbsent: 0,
      anomalies: [],
      lost: 0,
      violations: 0,
    };
    const url = () => cluster.url('retract');

    const startServer = async () => {
      server = startBuilt({ DATABASE_URL: url(), RETRACT_BOOTSTRAP_TOKEN: TOKEN });
      base = await server.url;
    };
    const killServer = async () => {
      server.child.kill('SIGKILL');
      await server.exited;
    };

    beforeAll(async () => {
      cluster = await createCluster({ maxConnections: 40 });
      const admin = new pg.Client({ connectionString: cluster.url() });
      await admin.connect();
      await admin.query('CREATE DATABASE retract');
      await admin.end();
      const store = await openStore({ databaseUrl: url(), poolSize: 2 });
      await store.close();
      await startServer();
    }, 300_000);
    afterAll(async () => {
      if (server) await killServer().catch(() => {});
      cluster?.drop();
      if (totals.runs) {
        fs.mkdirSync('results', { recursive: true });
        fs.writeFileSync(
          'results/history.json',
          JSON.stringify(
            { at: new Date().toISOString(), seed: SEED, clients: CLIENTS, opsPerClient: OPS, tree: TREE, ...totals },
            null,
            2,
          ),
        );
        console.log(
          `history: ${totals.runs} runs, ${totals.operations} operations ${JSON.stringify(totals.byOutcome)}, faults ${JSON.stringify(totals.faults)}, ` +
            `cascades under fault committed ${totals.cascadesCommitted} / absent ${totals.cascadesAbsent}, anomalies ${totals.anomalies.length}, lost ${totals.lost}, invariant violations ${totals.violations}`,
        );
      }
    });

    async function drill(fault: Fault, run: number): Promise<void> {
      const fleet = `h${run}${fault.replace(/-/g, '')}`;
      const store = await openStore({ databaseUrl: url(), poolSize: 2, migrate: false });
      const { agent, token } = await createAgentDirect(store, { fleet, name: `history-${run}`, scopes: SCOPES });
      const db = new pg.Client({ connectionString: url() });
      await db.connect();
      await db.query(`INSERT INTO effect_kinds (fleet_id, kind, reversible) VALUES ($1, 'refund', true)`, [fleet]);
      const tree = fault === 'none' ? null : await seedTree(db, fleet, `${fleet}/tree/`, TREE, agent.id);
      await db.end();
      await store.close();

      const s: Shared = {
        base: () => base,
        token,
        prefix: `${fleet}/k`,
        keys: 8,
        beliefs: [],
        retractions: [],
        reversals: [],
      };
      const subs = [new Subscriber('from-start', s, START), new Subscriber('from-now', s, null)];
      subs.forEach((x) => x.start());
      const extra: Recorded[] = [];
      const clients = runClients(s, {
        clients: fault === 'pool' ? CLIENTS * 4 : CLIENTS,
        ops: OPS,
        seed: SEED + run * 101,
      });
      let injected = 0;
      await new Promise((r) => setTimeout(r, 400));
      if (tree) {
        // A large cascade in flight when the fault hits: it must end whole or absent.
        const cascade = retractOp(s, `${fleet}-tree`, tree.root);
        const delay = 50 + ((run * 337) % 900);
        await new Promise((r) => setTimeout(r, delay));
        if (fault === 'server-kill') {
          await killServer();
          await startServer();
          injected++;
        } else if (fault === 'postmaster-kill') {
          cluster.kill9();
          await new Promise((r) => setTimeout(r, 500));
          await cluster.start();
          injected++;
        } else if (fault === 'pool') {
          injected += await exhaustConnections(cluster.url('retract'), 2_000);
        }
        extra.push(await cascade);
      }
      // The server rides out a database restart and a full pool: it does not die with them.
      const died = server.child.exitCode !== null || server.child.signalCode !== null;
      if (died)
        console.log(
          `history ${fleet}: the server exited (${server.child.exitCode ?? server.child.signalCode}) after ${fault}:\n${server.stderr().slice(-3000)}`,
        );
      expect(died).toBe(false);
      const during = [...(await clients), ...extra];
      // After the fault: a few more clients, whose work must go through (the system came back, not only stayed consistent).
      const after = await runClients(s, { clients: 2, ops: 8, seed: SEED + run * 101 + 50, firstProcess: 1_000 });
      const ops = [...during, ...after];
      await new Promise((r) => setTimeout(r, 1_000));
      const committed = await committedOrder(s, START);
      await Promise.all(subs.map((x) => x.stop()));
      const history = await collect(
        url(),
        fleet,
        ops,
        committed,
        subs.map((x) => ({ subscriber: x.name, cursors: x.cursors })),
      );
      const anomalies = check(history);
      if (anomalies.length) {
        fs.mkdirSync('results', { recursive: true });
        fs.writeFileSync(`results/history-${fleet}.json`, JSON.stringify(history, null, 1));
      }
      const check2 = await openStore({ databaseUrl: url(), poolSize: 2, migrate: false });
      const violations = await checkInvariants(check2);
      await check2.close();

      totals.runs++;
      totals.operations += ops.length;
      for (const o of ops) totals.byOutcome[o.outcome] = (totals.byOutcome[o.outcome] ?? 0) + 1;
      totals.faults[fault] = (totals.faults[fault] ?? 0) + injected;
      if (tree) {
        const inLog = history.log.some((t) => t.tag === `${fleet}-tree`);
        if (inLog) totals.cascadesCommitted++;
        else totals.cascadesAbsent++;
      }
      totals.anomalies.push(...anomalies);
      totals.lost += anomalies.filter((a) => a.type === 'lost').length;
      totals.violations += violations.length;
      const reads = ops.filter((o) => o.reads && o.outcome === 'ok').length;
      const errors: Record<string, number> = {};
      for (const o of ops)
        if (o.error)
          errors[o.error.replace(/\(request id [^)]*\)|\d+/g, 'N').slice(0, 120)] =
            (errors[o.error.replace(/\(request id [^)]*\)|\d+/g, 'N').slice(0, 120)] ?? 0) + 1;
      console.log(
        `history ${fleet}: ${ops.length} operations, ${reads} reads, ${committed.length} events, injected ${injected}; errors ${JSON.stringify(errors)}`,
      );
      expect({ fault, anomalies, violations }).toEqual({ fault, anomalies: [], violations: [] });
      // The checker reads this very history: the same history with one acknowledged write taken out of the log is a loss.
      const acked = ops.find((o) => o.writes && o.outcome === 'ok');
      if (acked)
        expect(check({ ...history, log: history.log.filter((t) => t.tag !== acked.tag) }).map((a) => a.type)).toContain(
          'lost',
        );
      // The drill exercised what it claims: reads to judge, and subscribers that saw events.
      expect(reads).toBeGreaterThan(0);
      if (history.receipts.length) expect(committed.length).toBeGreaterThan(0);
      // And the clients got on with their work once it passed.
      expect(
        after.filter((o) => o.outcome === 'ok').length,
        `after ${fault}: ${JSON.stringify(after.map((o) => o.error ?? o.outcome))}`,
      ).toBeGreaterThan(after.length / 2);
      if (tree) expect(rawId(tree.root)).toBeTruthy();
    }

    const faults: Fault[] = ['none', 'server-kill', 'postmaster-kill', 'pool'];
    it.each(faults)(
      "%s: the clients' history shows no anomaly and nothing lost",
      async (fault) => {
        await drill(fault, faults.indexOf(fault));
      },
      600_000,
    );

    it.runIf(MINUTES > 0)(
      `soak: every fault in turn for ${MINUTES} minutes`,
      async () => {
        const until = Date.now() + MINUTES * 60_000;
        for (let run = faults.length; Date.now() < until; run++) await drill(faults[run % faults.length]!, run);
      },
      MINUTES * 60_000 + 600_000,
    );
  },
);

/**
 * Takes every connection slot the cluster has left (ordinary connections, until "too many clients") and holds
 * them for `ms`, so the server's pool cannot grow and its callers queue; returns 1 (one fault injected).
 */
async function exhaustConnections(url: string, ms: number): Promise<number> {
  const held: pg.Client[] = [];
  for (let i = 0; i < 100; i++) {
    const c = new pg.Client({ connectionString: url });
    c.on('error', () => {});
    try {
      await c.connect();
      held.push(c);
    } catch {
      break;
    }
  }
  await new Promise((r) => setTimeout(r, ms));
  await Promise.all(held.map((c) => c.end().catch(() => {})));
  return 1;
}
