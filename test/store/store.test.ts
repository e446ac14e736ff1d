import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { actorIn, engines, expectInvariants, type TestDb } from '../support/engines';
import { assertBelief } from '../../src/belief/belief.service';
import { registerEffectKind } from '../../src/effect/effect.service';
import { DomainError } from '../../src/errors/domain-error';
import { inTx, isRetryable, readTx } from '../../src/store/tx';
import type { Actor, Core } from '../../src/core';
import { domainError, dump, expectUnchanged, read, closeFileStores, storeSuite } from '../support/helpers';
import pg from 'pg';
import { belief, passportStory } from '../support/story';
import { previewRetraction, retractBelief } from '../../src/retraction/retraction.service';
import { totalsFor } from '../../src/retraction/retraction.repository';
import {
  type Cursor,
  type EventRow,
  START,
  decodeCursor,
  encodeCursor,
  headCursor,
  tail,
} from '../../src/event/event.repository';

/** The store's machinery: bounded serialization retry, and an event log with no gap a tailer can fall into. */
afterAll(closeFileStores);

/** The transaction module: serialization failures raised by the database are retried, boundedly. */
describe.each(engines())('transactions on %s', (engine) => {
  let t: TestDb;
  let core: Core;
  let actor: Actor;
  storeSuite(engine, { shared: true, fleet: 'tx' }, (s) => ({ t, core, actor } = s));
  afterEach(() => {
    t.store.tx.faults.serializationFailures = 0;
    t.store.tx.faults.sharedMemoryFailures = 0;
  });

  it('the injected failure is a real SQLSTATE 40001 raised by the database', async () => {
    t.store.tx.faults.serializationFailures = 1;
    let caught: unknown;
    await inTx(t.store, { fleet: 'tx', maxAttempts: 1 }, async () => 1).catch((e) => (caught = e));
    expect(caught).toBeInstanceOf(DomainError);
    expect((caught as DomainError).message).toContain('SQLSTATE 40001');
    // The same SQLSTATE straight from the server is what the retry loop recognises.
    const raw = await sql`DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = '40001'; END $$`
      .execute(t.store.db)
      .catch((e) => e);
    expect(raw.code).toBe('40001');
    expect(isRetryable(raw)).toBe(true);
    expect(isRetryable({ code: '40P01' })).toBe(true);
    expect(isRetryable({ code: '23505' })).toBe(false);
  });

  it('three serialization failures in a row: assertBelief still succeeds, after exactly three retries', async () => {
    const retries = t.store.tx.stats.retries;
    const exhausted = t.store.tx.stats.exhausted;
    t.store.tx.faults.serializationFailures = 3;
    const r = await assertBelief(core, actor, {
      claimKey: 'tx/retried',
      statement: 'written after three conflicts',
      value: 3,
    });
    expect(r.kind).toBe('asserted');
    expect(t.store.tx.faults.serializationFailures).toBe(0);
    expect(t.store.tx.stats.retries - retries).toBe(3);
    expect(t.store.tx.stats.exhausted).toBe(exhausted);
    // Written once, with one event.
    const rows = await read(t.store, 'tx', async (tx) => ({
      beliefs: (await tx.selectFrom('beliefs').select('id').where('claim_key', '=', 'tx/retried').execute()).length,
      events: (await tx.selectFrom('events').select('seq').where('type', '=', 'BeliefAsserted').execute()).length,
    }));
    expect(rows).toEqual({ beliefs: 1, events: 1 });
    await expectInvariants(t.store);
  });

  it('more failures than maxAttempts (20 > 10): a clear CONFLICT after 10 attempts, and nothing written', async () => {
    const before = await dump(t.store);
    const retries = t.store.tx.stats.retries;
    const exhausted = t.store.tx.stats.exhausted;
    t.store.tx.faults.serializationFailures = 20;
    const e = await domainError(
      assertBelief(core, actor, { claimKey: 'tx/given-up', statement: 'never written' }),
      'CONFLICT',
    );
    expect(e.message).toMatch(/given up after 10 attempts/);
    expect(t.store.tx.faults.serializationFailures).toBe(10);
    expect(t.store.tx.stats.retries - retries).toBe(9);
    expect(t.store.tx.stats.exhausted - exhausted).toBe(1);
    t.store.tx.faults.serializationFailures = 0;
    await expectUnchanged(t.store, before);
    await expectInvariants(t.store);
  });

  it('"out of shared memory" (53200, the predicate-lock table full while a big cascade runs) is retried; other 53200s are not', async () => {
    const retries = t.store.tx.stats.retries;
    t.store.tx.faults.sharedMemoryFailures = 2;
    const r = await assertBelief(core, actor, {
      claimKey: 'tx/after-lock-table-full',
      statement: 'written after the lock table emptied',
      value: 1,
    });
    expect(r.kind).toBe('asserted');
    expect(t.store.tx.faults.sharedMemoryFailures).toBe(0);
    expect(t.store.tx.stats.retries - retries).toBe(2);
    const raw = await sql`DO $$ BEGIN RAISE EXCEPTION 'out of shared memory' USING ERRCODE = '53200'; END $$`
      .execute(t.store.db)
      .catch((e) => e);
    expect(raw.code).toBe('53200');
    expect(isRetryable(raw)).toBe(true);
    expect(isRetryable({ code: '53200', message: 'out of memory' })).toBe(false);
    const before = await dump(t.store);
    t.store.tx.faults.sharedMemoryFailures = 20;
    const e = await domainError(
      assertBelief(core, actor, { claimKey: 'tx/never', statement: 'never written' }),
      'CONFLICT',
    );
    expect(e.message).toMatch(/SQLSTATE 53200.*10 attempts.*max_pred_locks_per_transaction/);
    t.store.tx.faults.sharedMemoryFailures = 0;
    await expectUnchanged(t.store, before);
    await expectInvariants(t.store);
  });

  it('an error that is not a serialization failure is not retried and rolls the whole transaction back', async () => {
    const before = await dump(t.store);
    const retries = t.store.tx.stats.retries;
    let attempts = 0;
    const err = await inTx(t.store, { fleet: 'tx' }, async (tx) => {
      attempts++;
      await tx.insertInto('claims').values({ fleet_id: 'tx', key: 'tx/half-written' }).execute();
      await sql`SELECT 1/0`.execute(tx);
    }).catch((x) => x);
    expect(err.code).toBe('22012');
    expect(attempts).toBe(1);
    expect(t.store.tx.stats.retries).toBe(retries);
    await expectUnchanged(t.store, before);
  });

  it('a statement error swallowed inside the transaction: COMMIT is refused with an error and nothing is written', async () => {
    const before = await dump(t.store);
    const err = await inTx(t.store, { fleet: 'tx' }, async (tx) => {
      await tx.insertInto('claims').values({ fleet_id: 'tx', key: 'tx/swallowed' }).execute();
      await sql`SELECT 1/0`.execute(tx).catch(() => {});
      return 'looked fine';
    }).catch((x: Error) => x);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/rolled back/);
    await expectUnchanged(t.store, before);
  });

  it('role and fleet are set with BEGIN as quoted literals: the transaction sees exactly the fleet given, quotes and backslashes included', async () => {
    const fleet = `it's a \\fleet'; SELECT 1; --`;
    const r = await inTx(
      t.store,
      { fleet, readOnly: true },
      async (tx) =>
        (
          await sql<{ fleet: string; role: string; iso: string; ro: string }>`
        SELECT current_setting('retract.fleet') AS fleet, current_user AS role,
               current_setting('transaction_isolation') AS iso, current_setting('transaction_read_only') AS ro`.execute(
            tx,
          )
        ).rows[0],
    );
    expect(r).toEqual({ fleet, role: 'retract_app', iso: 'repeatable read', ro: 'on' });
    const w = await inTx(
      t.store,
      { fleet: 'tx', role: 'retract_reader' },
      async (tx) =>
        (
          await sql<{
            role: string;
            iso: string;
          }>`SELECT current_user AS role, current_setting('transaction_isolation') AS iso`.execute(tx)
        ).rows[0],
    );
    expect(w).toEqual({ role: 'retract_reader', iso: 'serializable' });
  });
});

const after = (row: EventRow): Cursor => ({ tx: row.tx, seq: row.seq, index: -1 });
const order = (rows: EventRow[]) => rows.map((r) => [BigInt(r.tx), BigInt(r.seq)] as const);

/** The event log: a retraction's events in cascade order, and no gap a tailer can fall into. */
describe.each(engines())('events on %s', (engine) => {
  let t: TestDb;
  let core: Core;
  let actor: Actor;
  storeSuite(engine, { shared: true, fleet: 'ev' }, (s) => ({ t, core, actor } = s));

  const tailFrom = (c: Cursor, limit = 1000, types?: Parameters<typeof tail>[4]) =>
    readTx(t.store, 'ev', (tx) => tail(tx, 'ev', c, limit, types));
  /**
   * Polls the tailer until `done` holds. The horizon is cluster-wide on PostgreSQL: a transaction
   * still running in another database (another test file) can hold committed events back briefly.
   */
  const tailUntil = async (c: Cursor, done: (rows: EventRow[]) => boolean): Promise<EventRow[]> => {
    for (const deadline = Date.now() + 20_000; ; await new Promise((r) => setTimeout(r, 25))) {
      const rows = await tailFrom(c, 10_000);
      if (done(rows) || Date.now() > deadline) return rows;
    }
  };
  const eventCount = async () =>
    Number(
      (
        await read(t.store, 'ev', (tx) =>
          tx
            .selectFrom('events')
            .select((e) => e.fn.countAll<string>().as('n'))
            .executeTakeFirstOrThrow(),
        )
      ).n,
    );
  /** The cursor past every event this fleet has committed so far. */
  const caughtUp = async (): Promise<Cursor> => {
    const n = await eventCount();
    const rows = await tailUntil(START, (r) => r.length >= n);
    expect(rows).toHaveLength(n);
    return rows.length ? after(rows.at(-1)!) : START;
  };

  it('rows of one transaction come in numeric seq order across a digit boundary (…8, 9, 10, 11…), and headCursor lands on the last', async () => {
    const chain = [await belief(core, actor, 'ev-digits/0')];
    for (let i = 1; i < 6; i++) chain.push(await belief(core, actor, `ev-digits/${i}`, [chain[i - 1]!]));
    const maxSeq = async () =>
      t.store.db.transaction().execute(async (tx) => {
        await sql`SET LOCAL row_security = off`.execute(tx);
        return Number(
          (await sql<{ m: string }>`SELECT coalesce(max(seq), 0)::text AS m FROM events`.execute(tx)).rows[0]!.m,
        );
      });
    // Pad the log (one event per registered kind) so the retraction's 3 events straddle a power of ten.
    let boundary = 10;
    while (boundary - 2 < (await maxSeq())) boundary *= 10;
    for (let i = 0; (await maxSeq()) < boundary - 2; i++)
      await registerEffectKind(core, actor, { kind: `pad${i}`, reversible: true });
    expect(await maxSeq()).toBe(boundary - 2);
    const head = await caughtUp();

    const { retractionId } = await retractBelief(core, actor, { beliefId: chain[0]!.id, reason: 'digits' });
    const rows = await tailUntil(head, (r) => r.length >= 3);
    expect(rows.map((r) => Number(r.seq))).toEqual([...Array(3).keys()].map((i) => boundary - 1 + i));
    // The six one-belief levels share one row: depth 0 on, six sizes of 1.
    expect(rows.map((r) => [r.type, r.depth, r.data])).toEqual([
      ['RetractionStarted', null, { reason: 'digits' }],
      ['BeliefRetracted', 0, { levels: [1, 1, 1, 1, 1, 1] }],
      ['RetractionCommitted', null, expect.anything()],
    ]);
    expect(rows[1]!.ids).toEqual(chain.map((b) => b.id));
    expect(rows.every((r) => r.retraction_id === retractionId)).toBe(true);
    // One row at a time walks the same order; headCursor is the last row.
    const walked: EventRow[] = [];
    for (let c = head; ;) {
      const [next] = await tailFrom(c, 1);
      if (!next) break;
      walked.push(next);
      c = after(next);
    }
    expect(walked).toEqual(rows);
    let headNow = await readTx(t.store, 'ev', (tx) => headCursor(tx, 'ev'));
    for (const deadline = Date.now() + 20_000; headNow.seq !== rows.at(-1)!.seq && Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 25));
      headNow = await readTx(t.store, 'ev', (tx) => headCursor(tx, 'ev'));
    }
    expect(headNow).toEqual(after(rows.at(-1)!));
    await expectInvariants(t.store);
  });

  it('a retraction appends Started, BeliefRetracted rows in cascade order (small levels together), EffectCancelled, ReversalRecorded, Committed with totals — in (tx, seq) order', async () => {
    const s = await passportStory(core, actor);
    const [identity, refundEligible, kycTier] = s.derived;
    const head = await caughtUp();
    // headCursor reaches the same point. (Not necessarily on the first read: the horizon leaves out other
    // databases' transactions by pg_stat_activity, so one that ends mid-read holds it back for that read.)
    let headNow = await readTx(t.store, 'ev', (tx) => headCursor(tx, 'ev'));
    for (
      const deadline = Date.now() + 20_000;
      JSON.stringify(headNow) !== JSON.stringify(head) && Date.now() < deadline;
    ) {
      await new Promise((r) => setTimeout(r, 25));
      headNow = await readTx(t.store, 'ev', (tx) => headCursor(tx, 'ev'));
    }
    expect(headNow).toEqual(head);
    await previewRetraction(core, actor, { beliefId: s.passport.id }); // rolled back: appends nothing
    expect(await tailFrom(head)).toEqual([]);

    const { retractionId } = await retractBelief(core, actor, { beliefId: s.passport.id, reason: 'forged' });
    const rows = await tailUntil(head, (r) => r.length >= 5);
    const reversals = await read(t.store, 'ev', (tx) =>
      tx.selectFrom('reversals').select('id').orderBy('id').execute(),
    );
    expect(rows.map((r) => [r.type, r.depth, r.ids])).toEqual([
      ['RetractionStarted', null, [s.passport.id]],
      ['BeliefRetracted', 0, [s.passport.id, identity!.id, kycTier!.id, refundEligible!.id]],
      ['EffectCancelled', null, [s.pending.id]],
      ['ReversalRecorded', null, reversals.map((r) => r.id)],
      ['RetractionCommitted', null, []],
    ]);
    expect(rows.every((r) => r.retraction_id === retractionId)).toBe(true);
    expect(new Set(rows.map((r) => r.tx)).size).toBe(1); // one transaction
    const keys = order(rows);
    for (let i = 1; i < keys.length; i++) expect(keys[i]![1] > keys[i - 1]![1]).toBe(true);
    expect(rows[0]!.data).toEqual({ reason: 'forged' });
    expect(rows[1]!.data).toEqual({ levels: [1, 2, 1] });
    const totals = await read(t.store, 'ev', (tx) => totalsFor(tx, 'ev', retractionId));
    expect(rows.at(-1)!.data).toEqual(totals);

    // Paging one row at a time walks the same rows; a type filter keeps the order.
    const walked: EventRow[] = [];
    let c = head;
    for (;;) {
      const [next] = await tailFrom(c, 1);
      if (!next) break;
      walked.push(next);
      c = after(next);
      expect(decodeCursor(encodeCursor(c))).toEqual(c);
    }
    expect(walked).toEqual(rows);
    const onlyBeliefs = await tailFrom(head, 100, ['BeliefRetracted']);
    expect(onlyBeliefs.map((r) => r.depth)).toEqual([0]);
    // A partly consumed row (index ≥ 0) is returned again so the rest of its ids can be streamed.
    const d1 = rows[1]!;
    const [again] = await tailFrom({ tx: d1.tx, seq: d1.seq, index: 1 }, 1);
    expect(again).toEqual(d1);
    await expectInvariants(t.store);
  });

  it("the log from the start holds every event of the fleet, in (tx, seq) order, and no other fleet's", async () => {
    const other = await actorIn(t.store, 'ev-other');
    await passportStory(core, other);
    const count = await eventCount();
    const all = await tailUntil(START, (r) => r.length >= count);
    expect(all).toHaveLength(count);
    const keys = order(all);
    for (let i = 1; i < keys.length; i++) {
      const [a, b] = [keys[i - 1]!, keys[i]!];
      expect(b[0] > a[0] || (b[0] === a[0] && b[1] > a[1])).toBe(true);
    }
    const ours = await read(t.store, 'ev', (tx) => tx.selectFrom('events').select('seq').orderBy('seq').execute());
    expect(all.map((r) => r.seq).sort((x, y) => Number(BigInt(x) - BigInt(y)))).toEqual(ours.map((r) => r.seq));
    await expectInvariants(t.store);
  });

  it.runIf(engine !== 'pglite')(
    "the classic gap: a slow writer's earlier-numbered event is delivered late, never skipped",
    async () => {
      const slow = new pg.Client({ connectionString: t.url });
      const fast = new pg.Client({ connectionString: t.url });
      await slow.connect();
      await fast.connect();
      try {
        // The reader has consumed everything so far.
        let cursor = await caughtUp();
        const start = cursor;
        const delivered: EventRow[] = [];
        const poll = async () => {
          const rows = await tailFrom(cursor);
          delivered.push(...rows);
          if (rows.length) cursor = after(rows.at(-1)!);
          return rows;
        };

        // Slow writer: takes its sequence number and transaction id first, then holds its transaction open.
        await slow.query('BEGIN');
        const s = await slow.query(
          `INSERT INTO events (fleet_id, type, data) VALUES ('ev', 'EffectKindRegistered', '{"writer":"slow"}') RETURNING seq::text, tx::text`,
        );
        expect(await poll()).toEqual([]);

        // Fast writer: a later number, committed first.
        const f = await fast.query(
          `INSERT INTO events (fleet_id, type, data) VALUES ('ev', 'EffectKindRegistered', '{"writer":"fast"}') RETURNING seq::text, tx::text`,
        );
        expect(BigInt(f.rows[0].seq)).toBeGreaterThan(BigInt(s.rows[0].seq));
        expect(BigInt(f.rows[0].tx)).toBeGreaterThan(BigInt(s.rows[0].tx));
        // The fast event is committed and visible to plain queries, but the tailer must not hand it out yet.
        const visible = await fast.query(`SELECT count(*)::int AS n FROM events WHERE seq = $1`, [f.rows[0].seq]);
        expect(visible.rows[0].n).toBe(1);
        for (let i = 0; i < 3; i++) expect(await poll()).toEqual([]);

        // A third writer committing meanwhile does not open the gate either.
        await fast.query(
          `INSERT INTO events (fleet_id, type, data) VALUES ('ev', 'EffectKindRegistered', '{"writer":"fast-2"}')`,
        );
        expect(await poll()).toEqual([]);

        await slow.query('COMMIT');
        for (const deadline = Date.now() + 20_000; delivered.length < 3 && Date.now() < deadline;) await poll();
        const late = [...delivered];
        expect(late.map((r) => (r.data as { writer: string }).writer)).toEqual(['slow', 'fast', 'fast-2']);
        expect(late[0]!.seq).toBe(s.rows[0].seq);
        expect(await poll()).toEqual([]);

        // Nothing was skipped: what the polling reader collected is exactly the log past its start.
        expect(delivered).toEqual(await tailFrom(start, 10_000));
      } finally {
        await slow.query('ROLLBACK').catch(() => {});
        await slow.end();
        await fast.end();
      }
    },
  );

  it.runIf(engine !== 'pglite')(
    'a slow writer that rolls back leaves no hole: the events after it arrive once it ends',
    async () => {
      const slow = new pg.Client({ connectionString: t.url });
      await slow.connect();
      try {
        const target = await belief(core, actor, 'ev/held-back');
        let cursor = await caughtUp();
        await slow.query('BEGIN');
        await slow.query(
          `INSERT INTO events (fleet_id, type, data) VALUES ('ev', 'EffectKindRegistered', '{"writer":"doomed"}')`,
        );
        const { retractionId } = await retractBelief(core, actor, {
          beliefId: target.id,
          reason: 'while a slow writer holds the horizon',
        });
        expect(await tailFrom(cursor)).toEqual([]);
        await slow.query('ROLLBACK');
        const rows = await tailUntil(cursor, (r) => r.some((x) => x.type === 'RetractionCommitted'));
        expect(rows.map((r) => r.type)).toContain('RetractionCommitted');
        expect(rows.every((r) => r.retraction_id === retractionId)).toBe(true);
        cursor = after(rows.at(-1)!);
        expect(await tailFrom(cursor)).toEqual([]);
      } finally {
        await slow.query('ROLLBACK').catch(() => {});
        await slow.end();
      }
      await expectInvariants(t.store);
    },
  );
});
