import pg from 'pg';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { assertBelief } from '../../src/belief/belief.service';
import { type Cursor, decodeCursor, headCursor } from '../../src/event/event.repository';
import { type StreamEvent, Waker, retractionEvents } from '../../src/event/tailer';
import { retractBelief } from '../../src/retraction/retraction.service';
import { readTx } from '../../src/store/tx';
import { citusUrl, onNode } from '../support/citus';
import { actorIn, coreOf, engines, expectInvariants, testStore, type TestDb } from '../support/engines';
import { passportStory } from '../support/story';

/**
 * On Citus a fleet's rows of every table sit in one shard group on one worker, and its work runs there: a
 * retraction, a turn and a subscription's resume for a fleet placed on worker 2 are read back from worker 2's own
 * shards, stamped with worker 2's transaction ids, and a fleet placed on worker 1 sees none of it.
 */
describe.skipIf(!engines().includes('citus'))('fleets placed on different workers (citus)', () => {
  let t: TestDb;
  let fleets: { w1: string; w2: string };
  let shard: { w1: string; w2: string };
  const workers = () => inject('citus').nodes.slice(1);

  /** Runs `q` on a worker's own copy of the test database, where its shards are tables of their own. */
  function onWorker<R extends pg.QueryResultRow>(port: number, q: string, params: unknown[] = []): Promise<R[]> {
    const node = workers().find((w) => w.port === port)!;
    return onNode(citusUrl()!, node, new URL(t.url!).pathname.slice(1), async (c) => {
      await c.query(`SET citus.override_table_visibility = off`);
      return (await c.query<R>(q, params)).rows;
    });
  }

  /** The fleet's shard of `claims` (every table of the fleet has the same shard index) and the port it is on. */
  async function placement(fleet: string): Promise<{ shard: string; port: number }> {
    const r = await sql<{ shard: string; port: number }>`
      SELECT s.shardid::text AS shard, n.nodeport AS port FROM pg_dist_shard s
        JOIN pg_dist_placement p ON p.shardid = s.shardid JOIN pg_dist_node n ON n.groupid = p.groupid
       WHERE s.shardid = get_shard_id_for_distribution_column('claims', ${fleet}::text)`.execute(t.store.db);
    return r.rows[0]!;
  }

  /** The name of `table`'s shard that holds the same fleets as `claimsShard` (co-located shards share their index). */
  async function shardOf(table: string, claimsShard: string): Promise<string> {
    const r = await sql<{ name: string }>`
      SELECT ${table}::text || '_' || o.shardid AS name FROM pg_dist_shard c JOIN pg_dist_shard o
          ON o.logicalrelid = ${table}::regclass AND o.shardminvalue = c.shardminvalue
       WHERE c.shardid = ${claimsShard}::bigint`.execute(t.store.db);
    return r.rows[0]!.name;
  }

  beforeAll(async () => {
    t = await testStore('citus');
    const [one, two] = workers();
    const found: Record<number, string> = {};
    for (let i = 0; !(found[one!.port] && found[two!.port]); i++) {
      const p = await placement(`placed-${i}`);
      found[p.port] ??= `placed-${i}`;
    }
    fleets = { w1: found[one!.port]!, w2: found[two!.port]! };
    shard = { w1: (await placement(fleets.w1)).shard, w2: (await placement(fleets.w2)).shard };
  });
  afterAll(async () => {
    if (t) await expectInvariants(t.store);
    await t?.close();
  });

  it('a retraction, a turn and a resumed subscription of the fleet on worker 2 run on worker 2, and the fleet on worker 1 sees none of it', async () => {
    const [one, two] = workers();
    const core = coreOf(t.store);
    const a1 = await actorIn(t.store, fleets.w1, 'one');
    const a2 = await actorIn(t.store, fleets.w2, 'two');
    await passportStory(core, a1);
    const s2 = await passportStory(core, a2);
    const rowsOf = (port: number, fleet: string, claimsShard: string) =>
      Promise.all(
        ['beliefs', 'effects', 'reversals', 'retractions', 'events', 'claims'].map(async (table) => {
          const name = await shardOf(table, claimsShard);
          const exists =
            (await onWorker<{ r: string | null }>(port, `SELECT to_regclass($1)::text AS r`, [name]))[0]!.r !== null;
          if (!exists) return { table, rows: null };
          return {
            table,
            rows: await onWorker(port, `SELECT * FROM ${name} WHERE fleet_id = $1 ORDER BY 1, 2`, [fleet]),
          };
        }),
      );
    const w1Before = await rowsOf(one!.port, fleets.w1, shard.w1);

    // The subscription's start: the head of fleet 2's log, read through the coordinator.
    const head = await readTx(t.store, fleets.w2, (tx) => headCursor(tx, fleets.w2));
    const { retractionId } = await retractBelief(core, a2, { beliefId: s2.passport.id, reason: 'forged' });
    const turn = await assertBelief(core, a2, {
      claimKey: 'customer:4411/address',
      statement: 'moved',
      value: { city: 'Lyon' },
    });
    expect(turn.kind).toBe('asserted');

    // Placement: fleet 2's shard is on worker 2 only; its rows are in worker 2's shard tables.
    expect((await placement(fleets.w2)).port).toBe(two!.port);
    for (const table of ['beliefs', 'retractions', 'events']) {
      const name = await shardOf(table, shard.w2);
      expect(
        (await onWorker<{ r: string | null }>(one!.port, `SELECT to_regclass($1)::text AS r`, [name]))[0]!.r,
        `${name} on worker 1`,
      ).toBeNull();
    }
    const [retracted] = await onWorker<{ n: number }>(
      two!.port,
      `SELECT count(*)::int AS n FROM ${await shardOf('beliefs', shard.w2)} WHERE fleet_id = $1 AND retraction_id = $2`,
      [fleets.w2, retractionId],
    );
    expect(retracted!.n).toBe(4);
    // The retraction's events and the turn's claim bump were written by worker 2's transactions and stamped with their ids:
    // each row's tx (last_tx) is the 32-bit xid of the row version worker 2 wrote.
    const events = await onWorker<{ n: number; own: number }>(
      two!.port,
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE (tx::text::numeric % 4294967296) = xmin::text::numeric)::int AS own
         FROM ${await shardOf('events', shard.w2)} WHERE fleet_id = $1 AND retraction_id = $2`,
      [fleets.w2, retractionId],
    );
    expect(events[0]!.n).toBeGreaterThanOrEqual(3);
    expect(events[0]!.own).toBe(events[0]!.n);
    const claim = await onWorker<{ own: boolean }>(
      two!.port,
      `SELECT (last_tx::text::numeric % 4294967296) = xmin::text::numeric AS own FROM ${await shardOf('claims', shard.w2)}
        WHERE fleet_id = $1 AND key = 'customer:4411/address'`,
      [fleets.w2],
    );
    expect(claim).toEqual([{ own: true }]);

    // The subscription from the head gets the whole cascade; resumed from its third event, exactly the rest.
    const stream = async (fleet: string, after: Cursor, until: (e: StreamEvent) => boolean, ms = 10_000) => {
      const waker = new Waker(t.store);
      await waker.start();
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(), ms);
      const got: StreamEvent[] = [];
      try {
        for await (const e of retractionEvents(t.store, waker, fleet, after, abort.signal)) {
          got.push(e);
          if (until(e)) break;
        }
      } catch (e) {
        if (!abort.signal.aborted) throw e;
      } finally {
        clearTimeout(timer);
        abort.abort();
        await waker.stop();
      }
      return got;
    };
    const committed = (e: StreamEvent) => e.__typename === 'RetractionCommitted';
    const all = await stream(fleets.w2, head, committed);
    expect(all.map((e) => e.__typename)).toEqual([
      'RetractionStarted',
      'BeliefRetracted',
      'BeliefRetracted',
      'BeliefRetracted',
      'BeliefRetracted',
      'EffectCancelled',
      'ReversalRecorded',
      'ReversalRecorded',
      'RetractionCommitted',
    ]);
    const resumed = await stream(fleets.w2, decodeCursor(all[2]!.cursor)!, committed);
    expect(resumed.map((e) => e.cursor)).toEqual(all.slice(3).map((e) => e.cursor));

    // Fleet 1 (worker 1): its stream from its own head carries nothing of fleet 2, and its rows did not change.
    const w1Head = await readTx(t.store, fleets.w1, (tx) => headCursor(tx, fleets.w1));
    expect(await stream(fleets.w1, w1Head, () => false, 1500)).toEqual([]);
    expect(await rowsOf(one!.port, fleets.w1, shard.w1)).toEqual(w1Before);
    expect((await rowsOf(one!.port, fleets.w2, shard.w1)).every((r) => r.rows === null || r.rows.length === 0)).toBe(
      true,
    );
  });

  // A transaction Citus commits with two-phase commit leaves one pg_dist_transaction row per worker it prepared on
  // (until the maintenance daemon's recovery, at most once a minute); one that touched a single worker commits
  // with one-phase commit and leaves none. Each kind of turn is checked on its own, right after it commits.
  it('every kind of turn of a fleet runs on its worker alone and commits without two-phase commit', async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, fleets.w2, 'turns');
    const twoPhase = async () =>
      Number((await sql<{ n: string }>`SELECT count(*) AS n FROM pg_dist_transaction`.execute(t.store.db)).rows[0]!.n);
    const turns: Array<[string, () => Promise<{ kind: string }>, string]> = [];
    let premise = '';
    turns.push([
      'a new claim',
      async () => {
        const r = await assertBelief(core, actor, { claimKey: 'turn/premise', statement: 'premise', value: 1 });
        if (r.kind === 'asserted') premise = r.belief.id;
        return r;
      },
      'asserted',
    ]);
    turns.push([
      'the same value',
      () => assertBelief(core, actor, { claimKey: 'turn/premise', statement: 'premise', value: 1 }),
      'corroborated',
    ]);
    turns.push([
      'another value',
      () => assertBelief(core, actor, { claimKey: 'turn/premise', statement: 'premise', value: 2 }),
      'contradiction',
    ]);
    turns.push([
      'a derived belief',
      () =>
        assertBelief(core, actor, { claimKey: 'turn/derived', statement: 'derived', value: 1, derivedFrom: [premise] }),
      'asserted',
    ]);
    for (const [what, turn, kind] of turns) {
      await sql`SELECT recover_prepared_transactions()`.execute(t.store.db);
      expect(await twoPhase(), `before ${what}`).toBe(0);
      expect((await turn()).kind, what).toBe(kind);
      expect(await twoPhase(), `${what}: workers prepared`).toBe(0);
    }
  });
});
