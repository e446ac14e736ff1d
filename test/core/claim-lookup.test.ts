import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activeBeliefComparedTo, activeOnClaim } from '../../src/belief/belief.repository';
import { readTx } from '../../src/store/tx';
import { actorIn, engines, expectInvariants, testStore, type TestDb } from '../support/engines';

interface PlanNode { 'Node Type': string; 'Index Name'?: string; 'Index Cond'?: string; 'Rows Removed by Filter'?: number; Plans?: PlanNode[] }
const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

/**
 * A claim's ACTIVE belief is found by an index search on the claim key whatever the statistics say:
 * in a fleet of 3,000 bulk-loaded, never-analyzed beliefs (autovacuum off, as on this project's CI
 * server), the lookup the COMMIT path runs must not read the fleet's beliefs and filter them.
 */
describe.each(engines())('claim lookup without statistics on %s', (engine) => {
  let t: TestDb;
  let agentId: string;
  beforeAll(async () => {
    t = await testStore(engine);
    agentId = (await actorIn(t.store, 'bulk')).agentId;
    await t.store.db.transaction().execute(async (tx) => {
      await sql`SET LOCAL row_security = off`.execute(tx);
      await sql`INSERT INTO claims (fleet_id, key) SELECT 'bulk', 'k/' || g FROM generate_series(0, 2999) g`.execute(tx);
      await sql`INSERT INTO beliefs (fleet_id, claim_key, statement, value, author_id, grounded, embedding)
        SELECT 'bulk', 'k/' || g, 'node ' || g, to_jsonb(g), ${agentId}, true, array_fill(0.0441941738::real, ARRAY[512])::vector(512)
          FROM generate_series(0, 2999) g`.execute(tx);
      await sql`INSERT INTO events (fleet_id, type, ids) SELECT 'bulk', 'BeliefAsserted', array_agg(id) FROM beliefs WHERE fleet_id = 'bulk'`.execute(tx);
    });
  });
  afterAll(async () => {
    if (t) await expectInvariants(t.store);
    await t?.close();
  });

  it('the ACTIVE-belief lookup searches an index on the claim key and removes no rows by filter', async () => {
    const plan = await readTx(t.store, 'bulk', async (tx) => {
      const q = activeOnClaim(tx, 'bulk', 'k/1234').select(['id']).compile();
      const r = await sql.raw<{ 'QUERY PLAN': unknown }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${q.sql.replace(/\$(\d+)/g, (_, i) => `'${String(q.parameters[Number(i) - 1])}'`)}`).execute(tx);
      const json = r.rows[0]!['QUERY PLAN'];
      return (typeof json === 'string' ? JSON.parse(json) : json) as Array<{ Plan: PlanNode }>;
    });
    const all = nodes(plan[0]!.Plan);
    expect(all.some((n) => /claim_key/.test(n['Index Cond'] ?? '')), JSON.stringify(plan)).toBe(true);
    expect(Math.max(0, ...all.map((n) => n['Rows Removed by Filter'] ?? 0)), JSON.stringify(plan)).toBeLessThanOrEqual(1);
    const found = await readTx(t.store, 'bulk', (tx) => activeBeliefComparedTo(tx, 'bulk', 'k/1234', '1234'));
    expect(found?.belief.claim_key).toBe('k/1234');
    expect(found?.sameValue).toBe(true);
  });
});
