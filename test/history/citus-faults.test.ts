import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/engine';
import { citusAvailable, createCitusCluster, type CitusCluster } from './citus-cluster';
import {
  besideServer,
  cascadeDelay,
  drill,
  exhaustConnections,
  MINUTES,
  newTotals,
  report,
  Server,
  TREE,
  type Fault,
  type Target,
} from './drill';

/**
 * The history drills (test/history/drill.ts) on a throwaway Citus cluster of this run's own (a coordinator and one
 * worker on free loopback ports, test/history/citus-cluster.ts; the shared 9700-9702 nodes are never signalled):
 *  - worker-2pc-kill: the worker killed -9 while a retraction is prepared on it and not yet committed, held there
 *    deterministically (below), then restarted; Citus' maintenance daemon must finish the prepared transaction;
 *  - coordinator-kill: the coordinator killed -9 mid-turn and restarted;
 *  - worker-freeze: every process of the worker SIGSTOPped for longer than the server's statement timeout, then
 *    SIGCONTed;
 *  - pool: every connection slot of the coordinator held, as on PostgreSQL.
 * After each: no prepared transaction left on any node, and the checker and checkInvariants find nothing.
 *
 * The hold between PREPARE and COMMIT: a retraction on Citus commits with two-phase commit (its INSERT … SELECTs
 * route intermediate results over a second connection; `citus.log_remote_commands` shows PREPARE TRANSACTION and
 * COMMIT PREPARED). Citus sends PREPARE TRANSACTION to the worker in PostgreSQL's pre-commit callback, commits
 * its own transaction (which recorded the prepared one in pg_dist_transaction), and only then sends COMMIT
 * PREPARED. The one wait PostgreSQL has in between, by construction, is the commit's wait for synchronous
 * replication: with `synchronous_standby_names` naming a standby that never connects, every commit on the
 * coordinator that wrote there waits after its commit record is flushed, that is after PREPARE and before COMMIT
 * PREPARED, until the setting is cleared. No timing, no patched build: Citus' own fault injection needs the
 * mitmproxy of its regression suite, a SIGSTOP of the coordinator's backend would have to hit a window of
 * microseconds, and an advisory lock or a trigger runs before the pre-commit callback, so before PREPARE.
 */
const STATEMENT_TIMEOUT_MS = 3_000;
/** A Citus cascade routes every statement through the coordinator: a third of PostgreSQL's tree keeps it as long. */
const CITUS_TREE = Math.max(200, Math.round(TREE / 3));

const skip = !process.env.RETRACT_TEST_CITUS_URL
  ? 'RETRACT_TEST_CITUS_URL is not set'
  : !citusAvailable()
    ? 'it needs root and the Citus scripts/ensure-citus.sh installs into PostgreSQL 15'
    : null;
if (skip) console.log(`The Citus fault drills are skipped: ${skip}.`);

describe.runIf(!skip)('histories under faults, on a throwaway Citus cluster', () => {
  let c: CitusCluster;
  const totals = newTotals();
  const heldClaims: string[] = [];
  const recovery: Array<{ fault: string; preparedAfterRestart: number; ms: number }> = [];
  // The server's own connections carry the statement timeout, as an operator would set it in DATABASE_URL.
  const serverUrl = () => `${c.url()}?options=${encodeURIComponent(`-c statement_timeout=${STATEMENT_TIMEOUT_MS}`)}`;
  const server = new Server(() => ({ DATABASE_URL: serverUrl() }));
  const target: Target = { engine: 'citus', server, tree: CITUS_TREE, offline: (fn) => besideServer(c.url(), fn) };

  beforeAll(async () => {
    c = await createCitusCluster({ workers: 1 });
    const store = await openStore({ databaseUrl: c.url(), poolSize: 2, engine: 'citus' });
    await store.close();
    await server.start();
  }, 600_000);
  afterAll(async () => {
    await server.kill().catch(() => {});
    c?.drop();
    report('citus', totals, { tree: CITUS_TREE, statementTimeoutMs: STATEMENT_TIMEOUT_MS, held: heldClaims, recovery });
  });

  const coordinatorSql = async <T>(sql: string, values: unknown[] = []) => {
    const db = new pg.Client({ connectionString: c.url() });
    db.on('error', () => {});
    await db.connect();
    try {
      return (await db.query(sql, values)).rows as T[];
    } finally {
      await db.end().catch(() => {});
    }
  };
  const hold = async (on: boolean) => {
    await coordinatorSql(`ALTER SYSTEM SET synchronous_standby_names = '${on ? 'retract_hold_nobody' : ''}'`);
    await coordinatorSql('SELECT pg_reload_conf()');
  };
  /** Citus' maintenance daemon's recovery of prepared transactions, every second or (false) not at all. */
  const daemon = async (on: boolean) => {
    await coordinatorSql(`ALTER SYSTEM SET citus.recover_2pc_interval = '${on ? '1s' : '-1'}'`);
    await coordinatorSql('SELECT pg_reload_conf()');
  };
  const prepared = async () => (await c.onEach<{ gid: string }>('SELECT gid FROM pg_prepared_xacts')).flat().length;
  /** Waits until no node holds a prepared transaction (the maintenance daemon finished or rolled back each one). */
  const settled = async (fault: string, preparedAfterRestart: number) => {
    const t0 = Date.now();
    for (;;) {
      const left = await prepared().catch(() => -1);
      if (left === 0) break;
      if (Date.now() - t0 > 120_000) throw new Error(`${fault}: ${left} prepared transactions still on the nodes`);
      await new Promise((r) => setTimeout(r, 250));
    }
    recovery.push({ fault, preparedAfterRestart, ms: Date.now() - t0 });
    console.log(
      `history citus ${fault}: ${preparedAfterRestart} prepared after restart, none left after ${Date.now() - t0} ms`,
    );
  };

  /**
   * The first retraction of `fleet` held prepared on the worker: a prepared transaction that has UPDATEd one of the
   * fleet's ACTIVE beliefs (pgrowlocks names the row's locker and its mode). A row lock alone is not one: a derive
   * or a proposal holds its premises FOR SHARE (lockBeliefs), which sets the same xmax, and writes no
   * BeliefRetracted. It is the cascade when the cascade gets there first, else one of the
   * clients' retractions: under the hold each of them waits, prepared, and the cascade (SERIALIZABLE) cannot commit
   * past a prepared transaction it conflicts with.
   */
  const heldRetraction = async (fleet: string) => {
    const [row] = await coordinatorSql<{ shard: string }>(
      `SELECT 'beliefs_' || get_shard_id_for_distribution_column('beliefs', $1::text) AS shard`,
      [fleet],
    );
    const w = new pg.Client({ connectionString: c.workers[0]!.url('retract') });
    w.on('error', () => {});
    await w.connect();
    try {
      const t0 = Date.now();
      while (Date.now() - t0 < 180_000) {
        const r = await w.query<{ gid: string; belief: string; claim: string }>(
          `SELECT p.gid, b.id::text AS belief, b.claim_key AS claim
             FROM pgrowlocks('${row!.shard}') l
             CROSS JOIN LATERAL unnest(l.xids, l.modes) AS x(xid, mode)
             JOIN pg_prepared_xacts p ON p.transaction::text = x.xid::text
             JOIN ${row!.shard} b ON b.ctid = l.locked_row
            WHERE b.fleet_id = $1 AND b.status = 'ACTIVE' AND x.mode IN ('Update', 'No Key Update') LIMIT 1`,
          [fleet],
        );
        if (r.rows.length) return r.rows[0]!;
        await new Promise((res) => setTimeout(res, 100));
      }
      throw new Error('no retraction reached PREPARE on the worker');
    } finally {
      await w.end().catch(() => {});
    }
  };

  const faults: Record<string, Fault | null> = {
    none: null,
    'worker-2pc-kill': {
      before: () => hold(true),
      inject: async (_run, fleet) => {
        const held0 = await heldRetraction(fleet);
        const gid = held0.gid;
        const held = await coordinatorSql<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event = 'SyncRep'`,
        );
        expect(held[0]!.n, 'a coordinator backend waits between PREPARE and COMMIT PREPARED').toBeGreaterThan(0);
        // The maintenance daemon paused, so that what the worker kept through its crash can be seen first.
        await daemon(false);
        c.workers[0]!.kill9();
        // Released while the worker is down: the coordinator's commit completes, its COMMIT PREPARED cannot.
        await hold(false);
        await new Promise((r) => setTimeout(r, 500));
        await c.workers[0]!.start();
        const kept = (await c.onEach<{ gid: string }>('SELECT gid FROM pg_prepared_xacts')).flat().map((x) => x.gid);
        expect(kept, 'the prepared cascade outlived the worker').toContain(gid);
        await daemon(true);
        await settled('worker-2pc-kill', kept.length);
        // The coordinator had committed: recovery committed the worker's half, and the held retraction is in the log.
        const [done] = await coordinatorSql<{ n: number }>(
          `SELECT count(*)::int AS n FROM events WHERE fleet_id = $1 AND type = 'BeliefRetracted' AND $2::bigint = ANY (ids)`,
          [fleet, held0.belief],
        );
        expect(done?.n, `the retraction of ${held0.claim} committed`).toBeGreaterThan(0);
        heldClaims.push(held0.claim.startsWith(`${fleet}/tree/`) ? 'cascade' : 'client');
        return 1;
      },
    },
    'coordinator-kill': {
      inject: async (run) => {
        await cascadeDelay(run);
        c.coordinator.kill9();
        await new Promise((r) => setTimeout(r, 500));
        await c.coordinator.start();
        await settled('coordinator-kill', await prepared());
        return 1;
      },
    },
    'worker-freeze': {
      inject: async (run) => {
        await cascadeDelay(run);
        c.workers[0]!.freeze(true);
        await new Promise((r) => setTimeout(r, STATEMENT_TIMEOUT_MS + 2_000));
        c.workers[0]!.freeze(false);
        await settled('worker-freeze', await prepared());
        return 1;
      },
    },
    pool: {
      inject: async (run) => {
        await cascadeDelay(run);
        const n = await exhaustConnections(c.url(), 2_000);
        await settled('pool', await prepared());
        return n;
      },
    },
  };
  const names = Object.keys(faults);
  it.each(names)(
    "%s: the clients' history shows no anomaly and nothing lost",
    async (fault) => {
      await drill(target, fault, names.indexOf(fault), faults[fault]!, totals);
    },
    600_000,
  );

  it.runIf(MINUTES > 0)(
    `soak: every Citus fault in turn for ${MINUTES} minutes`,
    async () => {
      const until = Date.now() + MINUTES * 60_000;
      for (let run = names.length; Date.now() < until; run++) {
        const fault = names[run % names.length]!;
        await drill(target, fault, run, faults[fault]!, totals);
      }
    },
    MINUTES * 60_000 + 600_000,
  );
});
