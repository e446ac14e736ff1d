import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import type { Store } from '../../src/store/engine';
import { type PausePoint, clearPausePoints, setPausePoint } from '../../src/store/pause';
import { assertBelief } from '../../src/belief/belief.service';
import { claimEffect, completeEffect, registerEffectKind } from '../../src/effect/effect.service';
import { retractBelief } from '../../src/retraction/retraction.service';
import { adjudicateContradiction } from '../../src/adjudication/adjudication.service';
import { actorIn, coreOf, expectInvariants, testStore, type TestDb } from '../support/engines';
import { belief, proposed } from '../support/story';

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };
const settle = <T>(p: Promise<T>): Promise<Settled<T>> =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (error) => ({ ok: false as const, error }),
  );

/** True once some backend of this database waits for a lock (pg_locks: a request not granted). */
async function waitBlocked(store: Store, done: () => boolean, ms = 5000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const r = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
       WHERE NOT l.granted AND a.datname = current_database()`.execute(store.db);
    if (r.rows[0]!.n > 0) return true;
    if (done()) return false;
    await new Promise((r) => setTimeout(r, 15));
  }
  throw new Error('the second operation neither blocked nor finished');
}

/**
 * Runs `first` until it reaches `point` (its transaction open, its locks held), then starts
 * `second`, waits until `second` blocks on a lock (seen in pg_locks) or finishes, then lets
 * `first` go on. Returns both outcomes and whether `second` had to wait.
 */
async function interleave<A, B>(store: Store, point: PausePoint, first: () => Promise<A>, second: () => Promise<B>) {
  let release!: () => void;
  let reached!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const atPause = new Promise<void>((r) => (reached = r));
  setPausePoint(point, async () => {
    reached();
    await held;
  });
  const a = settle(first());
  await Promise.race([
    atPause,
    new Promise((_, rej) => setTimeout(() => rej(new Error(`never reached ${point}`)), 10_000)),
  ]);
  let secondDone = false;
  const b = settle(second()).finally(() => (secondDone = true));
  const blocked = await waitBlocked(store, () => secondDone);
  release();
  return { first: await a, second: await b, blocked };
}

describe.runIf(!!process.env.RETRACT_TEST_DATABASE_URL)('deterministic interleavings on PostgreSQL', () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await testStore('postgres', { poolSize: 12 });
  });
  afterEach(() => clearPausePoints());
  afterAll(async () => t?.close());

  const statusOf = async (id: string) =>
    (await sql<{ status: string }>`SELECT status FROM beliefs WHERE id = ${id}`.execute(t.store.db)).rows[0]!.status;

  it('a premise retracted between READ and COMMIT: COMMIT holding the premise first → the retraction waits, then takes the new belief down too', async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, 'i1');
    const p = await belief(core, actor, 'i1:p/fact');
    const r = await interleave(
      t.store,
      'assertBelief:premises-locked',
      () =>
        assertBelief(core, actor, {
          claimKey: 'i1:d/derived',
          statement: 'derived from p',
          value: 1,
          derivedFrom: [p.id],
        }),
      () => retractBelief(core, actor, { beliefId: p.id, reason: 'forged' }),
    );
    expect(r.blocked).toBe(true);
    expect(r.first).toMatchObject({ ok: true, value: { kind: 'asserted' } });
    expect(r.second.ok).toBe(true);
    const d = (r.first as { value: { kind: 'asserted'; belief: { id: string } } }).value.belief;
    expect(await statusOf(d.id)).toBe('RETRACTED');
    await expectInvariants(t.store);
  });

  it('a premise retracted between READ and COMMIT: retraction holding the premise first → COMMIT waits, then answers PremiseRetracted', async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, 'i2');
    const p = await belief(core, actor, 'i2:p/fact');
    const r = await interleave(
      t.store,
      'retract:cascaded',
      () => retractBelief(core, actor, { beliefId: p.id, reason: 'forged' }),
      () =>
        assertBelief(core, actor, {
          claimKey: 'i2:d/derived',
          statement: 'derived from p',
          value: 1,
          derivedFrom: [p.id],
        }),
    );
    expect(r.blocked).toBe(true);
    expect(r.first.ok).toBe(true);
    expect(r.second).toMatchObject({ ok: true, value: { kind: 'premiseRetracted' } });
    const n = await sql<{ n: number }>`SELECT count(*)::int AS n FROM beliefs WHERE claim_key = 'i2:d/derived'`.execute(
      t.store.db,
    );
    expect(n.rows[0]!.n).toBe(0);
    await expectInvariants(t.store);
  });

  for (const [label, point, claimFirst] of [
    ['the executor holding the effect first', 'claimEffect:locked', true],
    ['the retraction holding the beliefs first', 'retract:cascaded', false],
  ] as const) {
    it(`an effect claimed while its support is being retracted (${label}): never both EXECUTING-unmarked and retracted`, async () => {
      const core = coreOf(t.store);
      const actor = await actorIn(t.store, `i3${claimFirst}`);
      await registerEffectKind(core, actor, { kind: 'refund', reversible: true });
      const p = await belief(core, actor, `i3${claimFirst}:p/fact`);
      const e = await proposed(core, actor, 'refund', [p], `i3-${claimFirst}`, 500);
      const claim = () => claimEffect(core, actor, { kinds: ['refund'] });
      const retract = () => retractBelief(core, actor, { beliefId: p.id, reason: 'forged' });
      const r = claimFirst
        ? await interleave(t.store, point, claim, retract)
        : await interleave(t.store, point, retract, claim);
      expect(r.first.ok && r.second.ok).toBe(true);
      const row = (
        await sql<{
          status: string;
          reached_by: string | null;
          cancelled_by: string | null;
        }>`SELECT status, reached_by::text, cancelled_by::text FROM effects WHERE id = ${e.id}`.execute(t.store.db)
      ).rows[0]!;
      if (row.status === 'EXECUTING') expect(row.reached_by).not.toBeNull();
      else expect(row).toMatchObject({ status: 'CANCELLED' });
      if (claimFirst) expect(row.status).toBe('EXECUTING');
      await expectInvariants(t.store);
    });
  }

  for (const [label, point, completeFirst] of [
    ['completeEffect holding the effect first', 'completeEffect:locked', true],
    ['the retraction having marked it reached first', 'retract:effects-reached', false],
  ] as const) {
    it(`completeEffect racing a retraction (${label}): exactly one reversal, OWED`, async () => {
      const core = coreOf(t.store);
      const actor = await actorIn(t.store, `i4${completeFirst}`);
      await registerEffectKind(core, actor, { kind: 'refund', reversible: true });
      const p = await belief(core, actor, `i4${completeFirst}:p/fact`);
      const e = await proposed(core, actor, 'refund', [p], `i4-${completeFirst}`, 700);
      expect((await claimEffect(core, actor, { kinds: ['refund'] }))?.id).toBe(e.id);
      const complete = () => completeEffect(core, actor, { effectId: e.id, externalRef: 'bank-1' });
      const retract = () => retractBelief(core, actor, { beliefId: p.id, reason: 'forged' });
      const r = completeFirst
        ? await interleave(t.store, point, complete, retract)
        : await interleave(t.store, point, retract, complete);
      expect(r.blocked).toBe(true);
      expect(r.first.ok && r.second.ok).toBe(true);
      const rev = (
        await sql<{
          status: string;
          idempotency_key: string;
        }>`SELECT status, idempotency_key FROM reversals WHERE effect_id = ${e.id}`.execute(t.store.db)
      ).rows;
      expect(rev).toEqual([{ status: 'OWED', idempotency_key: `reversal:i4-${completeFirst}` }]);
      await expectInvariants(t.store);
    });
  }

  it('two retractions of overlapping subgraphs: each belief falls once, under one retraction, and the shared dependent falls exactly once', async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, 'i5');
    const p1 = await belief(core, actor, 'i5:p1/fact');
    const p2 = await belief(core, actor, 'i5:p2/fact');
    const shared = await belief(core, actor, 'i5:shared/derived', [p1, p2]);
    const only1 = await belief(core, actor, 'i5:only1/derived', [p1]);
    const only2 = await belief(core, actor, 'i5:only2/derived', [p2]);
    const r = await interleave(
      t.store,
      'retract:cascaded',
      () => retractBelief(core, actor, { beliefId: p1.id, reason: 'first' }),
      () => retractBelief(core, actor, { beliefId: p2.id, reason: 'second' }),
    );
    expect(r.blocked).toBe(true);
    expect(r.first.ok && r.second.ok).toBe(true);
    const rows = (
      await sql<{ id: string; status: string; retraction_id: string }>`
      SELECT id::text, status, retraction_id::text FROM beliefs WHERE claim_key LIKE 'i5:%' ORDER BY beliefs.id`.execute(
        t.store.db,
      )
    ).rows;
    expect(rows.every((b) => b.status === 'RETRACTED')).toBe(true);
    const first = (r.first as { value: { retractionId: string } }).value.retractionId;
    const second = (r.second as { value: { retractionId: string } }).value.retractionId;
    const by = Object.fromEntries(rows.map((b) => [b.id, b.retraction_id]));
    expect([by[p1.id], by[only1.id], by[shared.id]]).toEqual([first, first, first]);
    expect([by[p2.id], by[only2.id]]).toEqual([second, second]);
    await expectInvariants(t.store);
  });

  for (const [label, second, want] of [
    ['the same value', 7, 'corroborated'],
    ['another value', 8, 'contradiction'],
  ] as const) {
    it(`two turns on one new claim (${label}): the second waits for the first's claim row, then answers ${want}; one ACTIVE belief`, async () => {
      const core = coreOf(t.store);
      const actor = await actorIn(t.store, `i7-${want}`);
      const key = `i7:${want}/fresh`;
      // The first turn creates the claim row and stops holding it, before it writes its belief.
      const r = await interleave(
        t.store,
        'assertBelief:premises-locked',
        () => assertBelief(core, actor, { claimKey: key, statement: 'seven', value: 7 }),
        () => assertBelief(core, actor, { claimKey: key, statement: 'second writer', value: second }),
      );
      expect(r.blocked).toBe(true);
      expect(r.first).toMatchObject({ ok: true, value: { kind: 'asserted' } });
      expect(r.second).toMatchObject({ ok: true, value: { kind: want } });
      const rows = (
        await sql<{ status: string }>`SELECT status FROM beliefs WHERE claim_key = ${key}`.execute(t.store.db)
      ).rows;
      expect(rows).toEqual([{ status: 'ACTIVE' }]);
      await expectInvariants(t.store);
    });
  }

  it("two adjudicators on one claim: the second waits for the first's lease, then gets CONFLICT without a model call", async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, 'i6');
    await assertBelief(core, actor, { claimKey: 'i6:c/weight', statement: 'weight 40', value: 40, evidence: 'scale' });
    const c = await assertBelief(core, actor, {
      claimKey: 'i6:c/weight',
      statement: 'weight 42',
      value: 42,
      evidence: 'official registry',
    });
    if (c.kind !== 'contradiction') throw new Error(c.kind);
    let calls = 0;
    const model = {
      id: 'test',
      async adjudicate() {
        calls++;
        return { verdict: 'KEEP_EXISTING' as const, rationale: 'keep' };
      },
    };
    const r = await interleave(
      t.store,
      'adjudicate:contradiction-locked',
      () => adjudicateContradiction(core, actor, model, c.contradictionId, { holder: 'A' }),
      () => adjudicateContradiction(core, actor, model, c.contradictionId, { holder: 'B' }),
    );
    expect(r.blocked).toBe(true);
    expect(r.first.ok).toBe(true);
    expect(r.second).toMatchObject({ ok: false, error: { code: 'CONFLICT' } });
    expect(calls).toBe(1);
    await expectInvariants(t.store);
  });
});
