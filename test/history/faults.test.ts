import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { openStore } from '../../src/store/engine';
import { createCluster, postgresAvailable, type Cluster } from './cluster';
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
 * The history drills (test/history/drill.ts) on a throwaway PostgreSQL cluster of this run's own: the server
 * killed -9 mid-cascade and restarted, the cluster's postmaster killed -9 mid-retraction and restarted, the
 * connection slots and the server's pool used up.
 */
const skip = !process.env.RETRACT_TEST_DATABASE_URL
  ? 'RETRACT_TEST_DATABASE_URL is not set'
  : !postgresAvailable()
    ? "they need root and PostgreSQL 15's binaries"
    : null;
if (skip) console.log(`The PostgreSQL fault drills are skipped: ${skip}.`);

describe.runIf(!skip)('histories under faults, on a throwaway PostgreSQL cluster', () => {
  let cluster: Cluster;
  const totals = newTotals();
  const url = () => cluster.url('retract');
  const server = new Server(() => ({ DATABASE_URL: url() }));
  const target: Target = { engine: 'postgres', server, tree: TREE, offline: (fn) => besideServer(url(), fn) };

  beforeAll(async () => {
    cluster = await createCluster({ maxConnections: 40 });
    const admin = new pg.Client({ connectionString: cluster.url() });
    await admin.connect();
    await admin.query('CREATE DATABASE retract');
    await admin.end();
    const store = await openStore({ databaseUrl: url(), poolSize: 2 });
    await store.close();
    await server.start();
  }, 300_000);
  afterAll(async () => {
    await server.kill().catch(() => {});
    cluster?.drop();
    report('postgres', totals, { tree: TREE });
  });

  const faults: Record<string, Fault | null> = {
    none: null,
    'server-kill': {
      inject: async (run) => {
        await cascadeDelay(run);
        await server.kill();
        await server.start();
        return 1;
      },
    },
    'postmaster-kill': {
      inject: async (run) => {
        await cascadeDelay(run);
        cluster.kill9();
        await new Promise((r) => setTimeout(r, 500));
        await cluster.start();
        return 1;
      },
    },
    pool: {
      inject: async (run) => {
        await cascadeDelay(run);
        return exhaustConnections(url(), 2_000);
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
    `soak: every fault in turn for ${MINUTES} minutes`,
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
