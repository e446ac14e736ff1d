import { describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { actorIn, coreOf, engines, expectInvariants, type TestDb } from '../support/engines';
import { belief, passportStory } from '../support/story';
import { retractBelief } from '../../src/retraction/retraction.service';
import { totalsFor } from '../../src/retraction/retraction.repository';
import { confirmReversal } from '../../src/reversal/reversal.service';
import { reinstateRetraction, restoreEffect } from '../../src/reinstatement/reinstatement.service';
import { reinstatementTotals, reinstatementsByIds } from '../../src/reinstatement/reinstatement.repository';
import { moneyLines } from '../../src/reversal/money-line.repository';
import { resolveContradiction } from '../../src/adjudication/adjudication.service';
import { claimEffect } from '../../src/effect/effect.service';
import { readTx } from '../../src/store/tx';
import type { Actor } from '../../src/core';
import type { Store } from '../../src/store/engine';
import { storeSuite } from '../support/helpers';

const usd = (amountMinor: number) => [{ amountMinor: String(amountMinor), currency: 'USD' }];

async function receipt(store: Store, actor: Actor, id: string) {
  return readTx(store, actor.fleet, async (tx) => ({
    row: (await reinstatementsByIds(tx, actor.fleet, [id]))[0]!,
    totals: await reinstatementTotals(tx, actor.fleet, id),
    lines: (await moneyLines(tx, actor.fleet, id)).map((l) => ({
      effect: l.effect_id,
      line: l.line,
      prior: l.prior_status,
      amount: l.amount_minor,
      key: l.reexecution_key,
    })),
  }));
}

async function rows(store: Store, actor: Actor) {
  return readTx(store, actor.fleet, async (tx) => ({
    beliefs: await tx
      .selectFrom('beliefs')
      .select(['id', 'status', 'retraction_id', 'retraction_depth'])
      .orderBy('id')
      .execute(),
    effects: await tx
      .selectFrom('effects')
      .select(['id', 'status', 'cancelled_by', 'reached_by'])
      .orderBy('id')
      .execute(),
    reversals: await tx
      .selectFrom('reversals')
      .select(['effect_id', 'status', 'idempotency_key'])
      .orderBy('effect_id')
      .execute(),
  }));
}

const eventCount = async (store: Store) =>
  (await sql<{ n: number }>`SELECT count(*)::int AS n FROM events`.execute(store.db)).rows[0]!.n;

describe.each(engines())('reinstating the passport retraction on %s', (engine) => {
  let t: TestDb;
  storeSuite(engine, {}, (s) => (t = s.t));

  it('brings the 4 beliefs back, voids the $1,240.00 OWED refund reversal and the $89.00 UNREACHABLE one, owes no re-execution, lists the payout as restorable; idempotent; retractable again', async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, 'acme');
    const s = await passportStory(core, actor);
    const before = await rows(t.store, actor);
    const { retractionId } = await retractBelief(core, actor, {
      beliefId: s.passport.id,
      reason: 'passport came back forged',
    });

    const r = await reinstateRetraction(core, actor, { retractionId, reason: 'the lab re-checked: genuine' });
    expect(r).toMatchObject({ kind: 'reinstated', created: true });
    const got = await receipt(t.store, actor, r.reinstatementId);
    expect(got.row.belief_ids).toEqual([s.passport.id, s.derived[0]!.id, s.derived[2]!.id, s.derived[1]!.id]);
    expect(got.row.belief_depths).toEqual([0, 1, 1, 2]);
    expect(got.lines).toEqual([
      { effect: s.refund.id, line: 'VOIDED', prior: 'OWED', amount: '124000', key: null },
      { effect: s.charge.id, line: 'VOIDED', prior: 'UNREACHABLE', amount: '8900', key: null },
    ]);
    expect(got.totals).toEqual({
      beliefsReinstated: 4,
      contradictionsRaised: 0,
      reversalsVoided: 2,
      reversalsInFlight: 0,
      reexecutionsOwed: 0,
      effectsRestorable: 1,
      effectsRestored: 0,
      voided: usd(132_900),
      inFlight: usd(0),
      reexecutionOwed: usd(0),
    });
    expect(got.row.restorable_effect_ids).toEqual([s.pending.id]);

    // The graph is as it was before the retraction; the money is named, not moved.
    const after = await rows(t.store, actor);
    expect(after.beliefs).toEqual(before.beliefs);
    expect(after.reversals.map((x) => x.status)).toEqual(['VOIDED', 'VOIDED']);
    expect(after.effects.find((e) => e.id === s.pending.id)).toMatchObject({
      status: 'CANCELLED',
      cancelled_by: retractionId,
    });
    const totals = await readTx(t.store, actor.fleet, (tx) => totalsFor(tx, actor.fleet, retractionId));
    expect({ owed: totals.owed, unreachable: totals.unreachableAmount, reversalsOwed: totals.reversalsOwed }).toEqual({
      owed: usd(0),
      unreachable: usd(0),
      reversalsOwed: 0,
    });
    await expectInvariants(t.store);

    // A second call returns the first receipt and writes nothing.
    const n = await eventCount(t.store);
    expect(await reinstateRetraction(core, actor, { retractionId, reason: 'again' })).toEqual({ ...r, created: false });
    expect(await eventCount(t.store)).toBe(n);

    // The cancelled payout goes back to PENDING under its own key, once; an executor can take it.
    const restored = await restoreEffect(core, actor, { effectId: s.pending.id });
    expect(restored).toMatchObject({
      status: 'PENDING',
      idempotency_key: 'customer:4411:payout-1',
      cancelled_by: null,
      restored_by: r.reinstatementId,
    });
    expect((await restoreEffect(core, actor, { effectId: s.pending.id })).status).toBe('PENDING');
    await expect(restoreEffect(core, actor, { effectId: s.refund.id })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect((await receipt(t.store, actor, r.reinstatementId)).totals.effectsRestored).toBe(1);
    await expectInvariants(t.store);

    // The passport can be retracted again: the voided reversals are owed again, under their one key.
    const again = await retractBelief(core, actor, { beliefId: s.passport.id, reason: 'forged after all' });
    expect(again.created).toBe(true);
    expect(again.retractionId).not.toBe(retractionId);
    const third = await rows(t.store, actor);
    expect(third.reversals).toEqual([
      { effect_id: s.refund.id, status: 'OWED', idempotency_key: 'reversal:customer:4411:refund-1' },
      { effect_id: s.charge.id, status: 'UNREACHABLE', idempotency_key: 'reversal:customer:4411:charge-1' },
    ]);
    expect(third.effects.find((e) => e.id === s.pending.id)).toMatchObject({
      status: 'CANCELLED',
      cancelled_by: again.retractionId,
    });
    await expectInvariants(t.store);
  });

  it('with the refund reversal CONFIRMED first, names $1,240.00 re-execution owed under a key derived from the reversal key', async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, 'confirmed-first');
    const s = await passportStory(core, actor);
    const { retractionId } = await retractBelief(core, actor, { beliefId: s.passport.id, reason: 'forged' });
    const owed = await readTx(t.store, actor.fleet, (tx) =>
      tx.selectFrom('reversals').select('id').where('status', '=', 'OWED').executeTakeFirstOrThrow(),
    );
    await confirmReversal(core, actor, { reversalId: owed.id, providerRef: 'prv_bank_991' });

    const r = await reinstateRetraction(core, actor, { retractionId, reason: 'genuine' });
    const got = await receipt(t.store, actor, r.reinstatementId);
    expect(got.lines).toEqual([
      {
        effect: s.refund.id,
        line: 'REEXECUTION_OWED',
        prior: 'CONFIRMED',
        amount: '124000',
        key: 'reexecution:reversal:customer:4411:refund-1',
      },
      { effect: s.charge.id, line: 'VOIDED', prior: 'UNREACHABLE', amount: '8900', key: null },
    ]);
    expect(got.totals).toMatchObject({
      beliefsReinstated: 4,
      reexecutionsOwed: 1,
      reexecutionOwed: usd(124_000),
      voided: usd(8_900),
    });
    // Nothing executes it: the reversal stays CONFIRMED with the provider's reference.
    expect((await rows(t.store, actor)).reversals[0]).toMatchObject({ status: 'CONFIRMED' });
    await expectInvariants(t.store);
  });

  it('a DISPATCHED reversal is watched; the provider confirming it makes it re-execution owed', async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, 'in-flight');
    const s = await passportStory(core, actor);
    const { retractionId } = await retractBelief(core, actor, { beliefId: s.passport.id, reason: 'forged' });
    const owed = await readTx(t.store, actor.fleet, (tx) =>
      tx.selectFrom('reversals').select('id').where('status', '=', 'OWED').executeTakeFirstOrThrow(),
    );
    await t.store.db
      .updateTable('reversals')
      .set({ status: 'DISPATCHED', dispatched_at: new Date() })
      .where('id', '=', owed.id)
      .execute();

    const r = await reinstateRetraction(core, actor, { retractionId, reason: 'genuine' });
    expect((await receipt(t.store, actor, r.reinstatementId)).totals).toMatchObject({
      reversalsInFlight: 1,
      inFlight: usd(124_000),
      reexecutionOwed: usd(0),
    });
    await expectInvariants(t.store);
    await confirmReversal(core, actor, { reversalId: owed.id, providerRef: 'prv_late_77' });
    const got = await receipt(t.store, actor, r.reinstatementId);
    expect(got.totals).toMatchObject({ reversalsInFlight: 0, reexecutionsOwed: 1, reexecutionOwed: usd(124_000) });
    expect(got.lines[0]).toMatchObject({
      line: 'REEXECUTION_OWED',
      prior: 'DISPATCHED',
      key: 'reexecution:reversal:customer:4411:refund-1',
    });
    await expectInvariants(t.store);
  });

  it("is BLOCKED by a contradiction when the root's claim gained another ACTIVE belief; accepting the retracted root completes it", async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, 'blocked');
    const s = await passportStory(core, actor);
    const { retractionId } = await retractBelief(core, actor, { beliefId: s.passport.id, reason: 'forged' });
    const rival = await belief(core, actor, 'customer:4411/passport.authentic', [], false);
    const before = await rows(t.store, actor);

    const r = await reinstateRetraction(core, actor, { retractionId, reason: 'genuine' });
    expect(r).toMatchObject({ kind: 'blocked', created: true });
    if (r.kind !== 'blocked') return;
    expect(await rows(t.store, actor)).toEqual(before);
    const c = await readTx(t.store, actor.fleet, (tx) =>
      tx.selectFrom('contradictions').selectAll().where('id', '=', r.contradictionId).executeTakeFirstOrThrow(),
    );
    expect(c).toMatchObject({ existing_id: rival.id, reinstates_id: s.passport.id, status: 'OPEN' });
    await expectInvariants(t.store);
    expect(await reinstateRetraction(core, actor, { retractionId, reason: 'again' })).toEqual({ ...r, created: false });

    await resolveContradiction(core, actor, 'reviewer', {
      contradictionId: r.contradictionId,
      verdict: 'ACCEPT_PROPOSED',
      rationale: 'the lab re-checked',
    });
    const after = await rows(t.store, actor);
    expect(after.beliefs.find((b) => b.id === s.passport.id)).toMatchObject({ status: 'ACTIVE' });
    expect(after.beliefs.find((b) => b.id === rival.id)).toMatchObject({ status: 'RETRACTED' });
    const got = await receipt(t.store, actor, r.reinstatementId);
    expect(got.row.status).toBe('REINSTATED');
    expect(got.totals).toMatchObject({ beliefsReinstated: 4, voided: usd(132_900) });
    expect(await reinstateRetraction(core, actor, { retractionId, reason: 'again' })).toEqual({
      kind: 'reinstated',
      reinstatementId: r.reinstatementId,
      created: false,
    });
    await expectInvariants(t.store);
  });

  it('an EXECUTING effect reached by the retraction is reached by none once it is reinstated, and completes owing nothing', async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, 'executing');
    const s = await passportStory(core, actor);
    const claimed = await claimEffect(core, actor, { kinds: ['payout'] });
    expect(claimed?.id).toBe(s.pending.id);
    const { retractionId } = await retractBelief(core, actor, { beliefId: s.passport.id, reason: 'forged' });
    expect((await rows(t.store, actor)).effects.find((e) => e.id === s.pending.id)).toMatchObject({
      reached_by: retractionId,
    });
    await reinstateRetraction(core, actor, { retractionId, reason: 'genuine' });
    expect((await rows(t.store, actor)).effects.find((e) => e.id === s.pending.id)).toMatchObject({
      status: 'EXECUTING',
      reached_by: null,
    });
    await expectInvariants(t.store);
  });

  it('refuses bad input naming the field, and an unknown retraction as NOT_FOUND, writing nothing', async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, 'refusals');
    const n = await eventCount(t.store);
    await expect(reinstateRetraction(core, actor, { retractionId: 'x', reason: 'r' })).rejects.toMatchObject({
      code: 'BAD_USER_INPUT',
      field: 'retractionId',
    });
    await expect(reinstateRetraction(core, actor, { retractionId: '1', reason: '' })).rejects.toMatchObject({
      code: 'BAD_USER_INPUT',
      field: 'reason',
    });
    await expect(reinstateRetraction(core, actor, { retractionId: '999999', reason: 'r' })).rejects.toMatchObject({
      code: 'NOT_FOUND',
      field: 'retractionId',
    });
    expect(await eventCount(t.store)).toBe(n);
  });
});
