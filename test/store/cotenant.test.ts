import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { assertBelief } from '../../src/belief/belief.service';
import { clearPausePoints, setPausePoint } from '../../src/store/pause';
import { actorIn, coreOf, engines, expectInvariants, testStore, type TestDb } from '../support/engines';

/**
 * Fleets whose distribution values hash into one Citus shard share its tables. A new shard is one page for a long
 * time, and the planner's cheapest path to one key of a 1-page table is a sequential scan, which under SERIALIZABLE
 * predicate-locks the whole shard and checks every row on it against concurrent writers: two co-tenant fleets'
 * turns, each reading the other's new claim row in the foreign-key check of its new belief, failed each other on
 * "Canceled on conflict out to pivot N, during read", and the bench gave up turns after ten such attempts
 * (docs/findings-log.md, "Citus: turns given up"). Turns of co-tenant fleets must not conflict at all.
 */
describe.skipIf(!engines().includes('citus'))('turns of fleets that share a shard (citus)', () => {
  let t: TestDb;
  let fleets: [string, string];
  /** A fleet on a shard of its own among these three. */
  let apart: string;
  const retries: string[] = [];

  beforeAll(async () => {
    t = await testStore('citus');
    t.store.tx.onRetry = (e) => retries.push(String((e as { detail?: string }).detail ?? (e as Error).message));
    const byShard = new Map<string, string>();
    for (let i = 0; ; i++) {
      const fleet = `cotenant-${i}`;
      const r = await sql<{
        s: string;
      }>`SELECT get_shard_id_for_distribution_column('claims', ${fleet}::text)::text AS s`.execute(t.store.db);
      const other = byShard.get(r.rows[0]!.s);
      if (other && !fleets) fleets = [other, fleet];
      else if (!other && byShard.size > 0 && fleets) {
        apart = fleet;
        break;
      }
      byShard.set(r.rows[0]!.s, fleet);
    }
  });
  afterEach(() => clearPausePoints());
  afterAll(async () => {
    if (t) await expectInvariants(t.store);
    await t?.close();
  });

  it("a turn paused with its new claim written, while a co-tenant fleet's turn writes and commits beside it: both commit on their first attempt", async () => {
    const core = coreOf(t.store);
    const [a, b] = await Promise.all(fleets.map((f) => actorIn(t.store, f, 'agent')));
    // A few claims of each fleet, then statistics: the shard is one page, as autovacuum records it in a run's first minute.
    for (let i = 0; i < 5; i++)
      for (const actor of [a!, b!]) await assertBelief(core, actor, { claimKey: `seed/${i}`, statement: 'seed' });
    await sql`ANALYZE claims`.execute(t.store.db);
    const pages = await sql<{ pages: number }>`
      SELECT max(result::int) AS pages FROM run_command_on_shards('claims', 'SELECT relpages FROM pg_class WHERE oid = ''%s''::regclass')`.execute(
      t.store.db,
    );
    expect(pages.rows[0]!.pages).toBe(1);
    retries.length = 0;

    // a's turn stops after its first statement (its claim row inserted, not committed); b's whole turn runs meanwhile.
    let release!: () => void;
    let paused!: () => void;
    const reached = new Promise<void>((r) => (paused = r));
    setPausePoint('assertBelief:premises-locked', () => {
      paused();
      return new Promise<void>((r) => (release = r));
    });
    const first = assertBelief(core, a!, { claimKey: 'turn/a', statement: 'a' });
    await reached;
    const second = await assertBelief(core, b!, { claimKey: 'turn/b', statement: 'b' });
    release();
    expect([(await first).kind, second.kind]).toEqual(['asserted', 'asserted']);
    expect(retries).toEqual([]);
  });

  it("a retried turn runs alone among its shard's writers: a co-tenant fleet's turn waits for it, a fleet on another shard does not", async () => {
    const core = coreOf(t.store);
    const [a, b, c] = await Promise.all([...fleets, apart].map((f) => actorIn(t.store, f, 'agent')));
    const waitingForShard = async () =>
      (
        await sql<{ n: number }>`
          SELECT count(*)::int AS n FROM pg_locks
           WHERE locktype = 'advisory' AND NOT granted AND classid = ${0x52_54_53_47}::oid`.execute(t.store.db)
      ).rows[0]!.n;
    retries.length = 0;
    // a's first attempt fails (a real 40001 raised in it); its retry stops inside its transaction.
    t.store.tx.faults.serializationFailures = 1;
    let release!: () => void;
    let paused!: () => void;
    const reached = new Promise<void>((r) => (paused = r));
    setPausePoint('assertBelief:premises-locked', () => {
      paused();
      return new Promise<void>((r) => (release = r));
    });
    const retried = assertBelief(core, a!, { claimKey: 'retry/a', statement: 'a' });
    await reached;
    expect(retries).toHaveLength(1);
    expect((await assertBelief(core, c!, { claimKey: 'retry/c', statement: 'c' })).kind).toBe('asserted');
    let settled = false;
    const cotenant = assertBelief(core, b!, { claimKey: 'retry/b', statement: 'b' }).finally(() => (settled = true));
    for (let i = 0; (await waitingForShard()) === 0; i++) {
      expect(i, "the co-tenant's turn never waited for the shard's lock").toBeLessThan(200);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(settled).toBe(false);
    release();
    expect([(await retried).kind, (await cotenant).kind]).toEqual(['asserted', 'asserted']);
    expect(retries).toHaveLength(1);
  });
});
