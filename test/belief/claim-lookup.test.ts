import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { activeBeliefComparedTo, activeOnClaim } from '../../src/belief/belief.repository';
import { lockClaimReadActive, lockClaimReadActiveQuery } from '../../src/belief/claim.repository';
import { inTx, readTx, type Tx } from '../../src/store/tx';
import { engines, expectInvariants, type TestDb } from '../support/engines';
import { storeSuite } from '../support/helpers';

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Loops'?: number;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}
/**
 * Every node of a plan; on Citus also the plans its tasks ran on the workers (and its subplans'), with the shards'
 * relation names as the tables' (beliefs_102028 → beliefs).
 */
const nodes = (n: PlanNode): PlanNode[] => {
  const q = (n as { 'Distributed Query'?: DistributedQuery })['Distributed Query'];
  const remote = q
    ? [
        ...(q.Subplans ?? []).flatMap((s) => s.PlannedStmt),
        ...(q.Job?.Tasks ?? []).flatMap((t) => t['Remote Plan'].flat()),
      ]
    : [];
  const self = n['Relation Name'] ? { ...n, 'Relation Name': n['Relation Name'].replace(/_\d+$/, '') } : n;
  return [self, ...(n.Plans ?? []).flatMap(nodes), ...remote.flatMap((p) => nodes(p.Plan))];
};
interface DistributedQuery {
  Subplans?: Array<{ PlannedStmt: Array<{ Plan: PlanNode }> }>;
  Job?: { Tasks?: Array<{ 'Remote Plan': Array<Array<{ Plan: PlanNode }>> }> };
}

/**
 * A claim's ACTIVE belief is found by an index search on the claim key whatever the statistics say:
 * in a fleet of 3,000 bulk-loaded, never-analyzed beliefs (autovacuum off, as on this project's CI
 * server), the lookup the COMMIT path runs must not read the fleet's beliefs and filter them.
 */
describe.each(engines())('claim lookup without statistics on %s', (engine) => {
  let t: TestDb;
  let agentId: string;
  storeSuite(engine, { fleet: 'bulk' }, async (s) => {
    t = s.t;
    agentId = s.actor.agentId;
    await t.store.db.transaction().execute(async (tx) => {
      await sql`SET LOCAL row_security = off`.execute(tx);
      await sql`INSERT INTO claims (fleet_id, key) SELECT 'bulk', 'k/' || g FROM generate_series(0, 2999) g`.execute(
        tx,
      );
      await sql`INSERT INTO beliefs (fleet_id, claim_key, statement, value, author_id, grounded, embedding)
        SELECT 'bulk', 'k/' || g, 'node ' || g, to_jsonb(g), ${agentId}, true, array_fill(0.0441941738::real, ARRAY[512])::vector(512)
          FROM generate_series(0, 2999) g`.execute(tx);
      await sql`INSERT INTO events (fleet_id, type, ids) SELECT 'bulk', 'BeliefAsserted', array_agg(id) FROM beliefs WHERE fleet_id = 'bulk'`.execute(
        tx,
      );
    });
  });
  afterAll(async () => {
    if (t) await expectInvariants(t.store);
  });

  /** EXPLAIN ANALYZE of a compiled query with its parameters inlined as literals (they are plain text here). */
  async function planOf(tx: Tx, q: { sql: string; parameters: readonly unknown[] }): Promise<PlanNode[]> {
    const literal = (p: unknown) => (p === null ? 'NULL' : `'${String(p)}'`);
    const r = await sql
      .raw<{ 'QUERY PLAN': unknown }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${q.sql.replace(/\$(\d+)/g, (_, i) => literal(q.parameters[Number(i) - 1]))}`,
      )
      .execute(tx);
    const json = r.rows[0]!['QUERY PLAN'];
    return nodes(((typeof json === 'string' ? JSON.parse(json) : json) as Array<{ Plan: PlanNode }>)[0]!.Plan);
  }
  const searchesClaimKey = (all: PlanNode[]) => {
    expect(
      all.some((n) => /claim_key/.test(n['Index Cond'] ?? '')),
      JSON.stringify(all),
    ).toBe(true);
    expect(Math.max(0, ...all.map((n) => n['Rows Removed by Filter'] ?? 0)), JSON.stringify(all)).toBeLessThanOrEqual(
      1,
    );
  };

  it('the ACTIVE-belief lookup searches an index on the claim key and removes no rows by filter', async () => {
    searchesClaimKey(
      await readTx(t.store, 'bulk', (tx) => planOf(tx, activeOnClaim(tx, 'bulk', 'k/1234').select(['id']).compile())),
    );
    const found = await readTx(t.store, 'bulk', (tx) => activeBeliefComparedTo(tx, 'bulk', 'k/1234', '1234'));
    expect(found?.belief.claim_key).toBe('k/1234');
    expect(found?.sameValue).toBe(true);
  });

  it("a turn's first statement (lock the claim, read its ACTIVE belief) does the same, searches nothing for a claim it creates, and reads what the lookup reads", async () => {
    // A write transaction, rolled back: EXPLAIN ANALYZE runs the INSERT … ON CONFLICT and the lock.
    const rollback = new Error('rollback');
    let seen: Record<'same' | 'other' | 'none', Awaited<ReturnType<typeof lockClaimReadActive>>> | null = null;
    await inTx(t.store, { fleet: 'bulk' }, async (tx) => {
      searchesClaimKey(await planOf(tx, lockClaimReadActiveQuery('bulk', 'k/1234', '1234', null).compile(tx)));
      // A claim the statement creates: neither claims nor beliefs is searched (no predicate lock on an index gap).
      const fresh = await planOf(tx, lockClaimReadActiveQuery('bulk', 'k/fresh', '1', null).compile(tx));
      const searched = fresh.filter(
        (n) =>
          /Scan/.test(n['Node Type']) &&
          ['beliefs', 'claims'].includes(n['Relation Name'] ?? '') &&
          (n['Actual Loops'] ?? 0) > 0,
      );
      expect(searched, JSON.stringify(fresh)).toEqual([]);
      seen = {
        same: await lockClaimReadActive(tx, 'bulk', 'k/1234', '1234', null),
        other: await lockClaimReadActive(tx, 'bulk', 'k/1234', '"x"', null),
        none: await lockClaimReadActive(tx, 'bulk', 'k/new', '1', null),
      };
      throw rollback;
    }).catch((e) => (e === rollback ? null : Promise.reject(e)));
    expect(seen!.same).toMatchObject({
      visibleInSnapshot: true,
      active: { sameValue: true, belief: { claim_key: 'k/1234' } },
    });
    expect(seen!.other.active?.sameValue).toBe(false);
    expect(seen!.none).toMatchObject({ visibleInSnapshot: true, active: undefined });
  });
});
