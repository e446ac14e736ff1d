import fs from 'node:fs';
import pg from 'pg';
import { createCluster, postgresAvailable, type Cluster } from './cluster';

/**
 * A throwaway Citus cluster of its own: a coordinator and `workers` workers, each a PostgreSQL 15 cluster of
 * test/history/cluster.ts (its own directory and free loopback port) preloading the Citus that
 * scripts/ensure-citus.sh installed into that PostgreSQL, with one database `retract` made a Citus database on
 * every node and the workers registered, as scripts/ensure-citus.sh does for the shared cluster (9700-9702), which
 * a fault drill never touches. The maintenance daemon recovers prepared transactions every second
 * (`citus.recover_2pc_interval`; the default is a minute) so that a drill can wait for it rather than call it.
 */
export interface CitusCluster {
  coordinator: Cluster;
  workers: Cluster[];
  /** The coordinator's `retract` database (or another one on it). */
  url: (db?: string) => string;
  /** Rows of `sql` run on every node, coordinator first (the database `retract`). */
  onEach: <T>(sql: string) => Promise<T[][]>;
  drop: () => void;
}

/** Root with PostgreSQL 15's binaries, and the Citus scripts/ensure-citus.sh installed into that PostgreSQL. */
export const citusAvailable = () => postgresAvailable() && fs.existsSync('/usr/lib/postgresql/15/lib/citus.so');

const CONF = [
  `shared_preload_libraries = 'citus'`,
  // Citus commits a transaction that wrote over more than one connection with two-phase commit.
  'max_prepared_transactions = 100',
  'max_worker_processes = 32',
  `citus.recover_2pc_interval = '1s'`,
];

export async function createCitusCluster(
  opts: { workers?: number; maxConnections?: number } = {},
): Promise<CitusCluster> {
  const made: Cluster[] = [];
  const drop = () => made.forEach((c) => c.drop());
  try {
    for (let i = 0; i < 1 + (opts.workers ?? 1); i++)
      made.push(await createCluster({ maxConnections: opts.maxConnections ?? 80, conf: CONF }));
    const [coordinator, ...workers] = made as [Cluster, ...Cluster[]];
    for (const n of made) {
      await run(n.url(), ['CREATE DATABASE retract']);
      // pgrowlocks: a drill tells a prepared transaction's row UPDATE from its row lock (test/history/citus-faults.test.ts).
      await run(n.url('retract'), ['CREATE EXTENSION citus', 'CREATE EXTENSION vector', 'CREATE EXTENSION pgrowlocks']);
    }
    await run(coordinator.url('retract'), [
      `SELECT citus_set_coordinator_host('127.0.0.1', ${coordinator.port})`,
      ...workers.map((w) => `SELECT citus_add_node('127.0.0.1', ${w.port})`),
      // Few shards per table, as the test template has: the migrations' DDL stays quick.
      'ALTER DATABASE retract SET citus.shard_count = 4',
    ]);
    return {
      coordinator,
      workers,
      url: (db = 'retract') => coordinator.url(db),
      onEach: async <T>(sql: string) => {
        const out: T[][] = [];
        for (const n of made) out.push((await run(n.url('retract'), [sql]))[0] as T[]);
        return out;
      },
      drop,
    };
  } catch (e) {
    drop();
    throw e;
  }
}

async function run(url: string, statements: string[]): Promise<unknown[][]> {
  const c = new pg.Client({ connectionString: url });
  c.on('error', () => {});
  await c.connect();
  try {
    const out: unknown[][] = [];
    for (const s of statements) out.push((await c.query(s)).rows);
    return out;
  } finally {
    await c.end().catch(() => {});
  }
}
