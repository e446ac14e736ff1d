/**
 * One retraction of an n-belief tree (fan-out 4, bulk-loaded like the crash drill) on PostgreSQL,
 * in a store that was ANALYZEd after the load and in one that never was (relpages 0: the planner
 * believes every table empty). Prints both times and their ratio; exits 1 if the unanalyzed one
 * takes more than 10× the analyzed one (the cascade query must not fall into a quadratic plan).
 *
 *   npx tsx experiments/unanalyzed_cascade.ts [n=100000] [server=postgres://postgres@127.0.0.1:5432/postgres]
 */
import os from 'node:os';
import { sql } from 'kysely';
import { freshDb } from './bench/lib/stores';
import { createAgentDirect } from '../src/agent/agent.service';
import { SCOPES } from '../src/agent/scopes';
import { retractInTx } from '../src/retraction/retraction.service';
import { inTx } from '../src/store/tx';

const n = Number(process.argv[2] ?? 100_000);
const server = process.argv[3] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function once(analyze: boolean): Promise<{ ms: number; retracted: number }> {
  const db = await freshDb('postgres', server, `retract_unanalyzed_${analyze ? 'a' : 'n'}`);
  try {
    const store = await db.open(2);
    try {
      await sql`DROP INDEX IF EXISTS beliefs_embedding`.execute(store.db);
      const { agent } = await createAgentDirect(store, { fleet: 'bulk', name: 'loader', scopes: SCOPES });
      const agentId = String((agent as { id: string }).id);
      await store.db.transaction().execute(async (tx) => {
        await sql`SET LOCAL row_security = off`.execute(tx);
        const vec = `[${Array.from({ length: 512 }, (_, i) => (i === 0 ? 1 : 0)).join(',')}]`;
        await sql`INSERT INTO claims (fleet_id, key) SELECT 'bulk', 'b:' || g FROM generate_series(0, ${n - 1}) g`.execute(
          tx,
        );
        await sql`INSERT INTO beliefs (fleet_id, claim_key, statement, value, author_id, grounded, embedding)
          SELECT 'bulk', 'b:' || g, 'node ' || g, 'true', ${agentId}, g = 0, ${vec}::vector FROM generate_series(0, ${n - 1}) g`.execute(
          tx,
        );
        await sql`CREATE TEMP TABLE ids ON COMMIT DROP AS SELECT split_part(claim_key, ':', 2)::int AS g, id FROM beliefs`.execute(
          tx,
        );
        await sql`CREATE INDEX ON ids (g)`.execute(tx);
        await sql`INSERT INTO justifications (fleet_id, belief_id, created_by) SELECT 'bulk', id, ${agentId} FROM ids WHERE g > 0`.execute(
          tx,
        );
        await sql`INSERT INTO justification_premises (justification_id, premise_id, fleet_id)
          SELECT j.id, p.id, 'bulk' FROM justifications j JOIN ids c ON c.id = j.belief_id JOIN ids p ON p.g = (c.g - 1) / 4`.execute(
          tx,
        );
        await sql`INSERT INTO events (fleet_id, type, ids) SELECT 'bulk', 'BeliefAsserted', array_agg(id) FROM ids`.execute(
          tx,
        );
      });
      // Keep autovacuum from analyzing the unanalyzed store while it is measured.
      for (const t of ['beliefs', 'justifications', 'justification_premises', 'events'])
        await sql.raw(`ALTER TABLE ${t} SET (autovacuum_enabled = ${analyze})`).execute(store.db);
      if (analyze) await sql`ANALYZE`.execute(store.db);
      const root = (await sql<{ id: string }>`SELECT id::text FROM beliefs WHERE claim_key = 'b:0'`.execute(store.db))
        .rows[0]!.id;
      const t0 = performance.now();
      await inTx(store, { fleet: 'bulk' }, (tx) =>
        retractInTx(tx, { fleet: 'bulk', agentId }, root, 'bulk-loaded root was false'),
      );
      const ms = performance.now() - t0;
      const [r] = (await sql<{ n: number }>`SELECT beliefs_retracted AS n FROM retractions`.execute(store.db)).rows;
      return { ms, retracted: Number(r!.n) };
    } finally {
      await store.close();
    }
  } finally {
    await db.drop();
  }
}

const analyzed = await once(true);
const unanalyzed = await once(false);
if (analyzed.retracted !== n || unanalyzed.retracted !== n)
  throw new Error(`expected ${n} retracted in both, got ${analyzed.retracted} and ${unanalyzed.retracted}`);
const ratio = unanalyzed.ms / analyzed.ms;
console.log(
  `unanalyzed_cascade: ${n} beliefs, PostgreSQL, ${os.cpus().length}× ${os.cpus()[0]?.model}, load ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}, ${new Date().toISOString()}`,
);
console.log(`  analyzed after the bulk load: ${analyzed.ms.toFixed(0)} ms`);
console.log(
  `  never analyzed (relpages 0):  ${unanalyzed.ms.toFixed(0)} ms  = ${ratio.toFixed(2)}× (limit 10×) ${ratio <= 10 ? 'MET' : 'MISSED'}`,
);
process.exit(ratio <= 10 ? 0 : 1);
