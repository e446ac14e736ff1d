import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actorIn, coreOf, engines, expectInvariants, testStore, type TestDb } from '../support/engines';
import { belief, executed, passportStory, proposed } from '../support/story';
import { assertBelief } from '../../src/belief/belief.service';
import { claimEffect, failEffect, registerEffectKind } from '../../src/effect/effect.service';
import type { EffectRow } from '../../src/effect/effect.repository';
import { retractBelief } from '../../src/retraction/retraction.service';
import { confirmReversal } from '../../src/reversal/reversal.service';
import type { Actor, Core } from '../../src/core';
import { changedColumns, diff, dump, read, summary } from './helpers';

async function claimed(core: Core, actor: Actor, effect: EffectRow): Promise<EffectRow> {
  const c = await claimEffect(core, actor, { kinds: [effect.kind] });
  expect(c?.id).toBe(effect.id);
  return c!;
}

/**
 * The exact blast radius: the passport story next to an unrelated subgraph holding effects in every
 * state, an earlier retraction with its reversals, a contradiction, and a survivor that rests on the
 * passport's closure through one justification and on unrelated evidence through another.
 */
describe.each(engines())('blast radius on %s', (engine) => {
  let t: TestDb;
  beforeAll(async () => {
    t = await testStore(engine);
  });
  afterAll(async () => t?.close());

  it('retracting the passport changes exactly its closure, and every other row of every table stays byte-for-byte identical', async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, 'acme');
    const s = await passportStory(core, actor);
    const [identity, refundEligible, kycTier] = s.derived as [typeof s.passport, typeof s.passport, typeof s.passport];

    // The unrelated subgraph.
    await registerEffectKind(core, actor, { kind: 'ship', reversible: true });
    await registerEffectKind(core, actor, { kind: 'notify', reversible: false });
    const shipped = await belief(core, actor, 'order:77/shipped');
    const address = await belief(core, actor, 'order:77/address.valid');
    const u1 = await belief(core, actor, 'order:77/deliverable', [shipped]);
    const u2 = await belief(core, actor, 'order:77/insured', [shipped, address]);
    // A survivor: rests on identity (which falls) and, separately, on the address (which does not).
    const loyalty = await belief(core, actor, 'customer:4411/loyalty.points', [identity], 120);
    const alt = await assertBelief(core, actor, { claimKey: 'customer:4411/loyalty.points', statement: 'loyalty from address', value: 120, derivedFrom: [address.id] });
    expect(alt.kind).toBe('corroborated');

    const ePend = await proposed(core, actor, 'notify', [u1], 'u:pending', 100);
    const eExec = await proposed(core, actor, 'ship', [u2], 'u:executing', 2_500);
    await claimed(core, actor, eExec);
    const eDone = await executed(core, actor, await proposed(core, actor, 'ship', [u1], 'u:executed', 3_000), 'ship-ref-1');
    const eFail = await proposed(core, actor, 'ship', [u2], 'u:failed-running', 700);
    await claimed(core, actor, eFail);
    await failEffect(core, actor, { effectId: eFail.id, reason: 'carrier refused' });
    const ePendFail = await proposed(core, actor, 'notify', [u2], 'u:failed-pending');
    await failEffect(core, actor, { effectId: ePendFail.id, reason: 'no channel' });
    const eSurvivor = await proposed(core, actor, 'notify', [loyalty], 'u:on-survivor');

    // An earlier, unrelated retraction: a cancelled effect, an OWED-then-CONFIRMED reversal, an UNREACHABLE one.
    const paid = await belief(core, actor, 'order:90/paid');
    const h1 = await belief(core, actor, 'order:90/fulfilable', [paid]);
    const eCancelled = await proposed(core, actor, 'notify', [h1], 'h:cancelled');
    const eRev = await executed(core, actor, await proposed(core, actor, 'ship', [h1], 'h:reversed', 4_200), 'ship-ref-2');
    const eUnr = await executed(core, actor, await proposed(core, actor, 'card_charge', [h1], 'h:unreachable', 990), 'card-ref-2');
    const earlier = await retractBelief(core, actor, { beliefId: paid.id, reason: 'payment bounced' });
    const revs = await read(t.store, 'acme', (tx) => tx.selectFrom('reversals').selectAll().orderBy('id').execute());
    expect(revs.map((r) => [r.effect_id, r.status])).toEqual([[eRev.id, 'OWED'], [eUnr.id, 'UNREACHABLE']]);
    await confirmReversal(core, actor, { reversalId: revs[0]!.id, providerRef: 'prv_777' });
    // A contradiction on an unrelated claim.
    const c = await assertBelief(core, actor, { claimKey: 'order:77/shipped', statement: 'order 77 never left', value: false });
    expect(c.kind).toBe('contradiction');

    // Effects that touch the passport's closure.
    const eMixed = await proposed(core, actor, 'notify', [refundEligible, u1], 'x:mixed');
    const eReach = await proposed(core, actor, 'ship', [kycTier], 'x:executing-on-kyc', 1_000);
    await claimed(core, actor, eReach);
    await expectInvariants(t.store);

    const before = await dump(t.store);
    const { retractionId: R, created } = await retractBelief(core, actor, { beliefId: s.passport.id, reason: 'passport came back forged' });
    expect(created).toBe(true);
    expect(R).not.toBe(earlier.retractionId);
    const after = await dump(t.store);
    const d = diff(before, after);

    // Only these tables differ at all, and nothing was ever deleted.
    expect(Object.keys(d).sort()).toEqual(['beliefs', 'effects', 'events', 'retractions', 'reversals']);
    for (const x of Object.values(d)) expect(x.removed).toEqual([]);

    // The receipt.
    expect(d.retractions!.changed.size).toBe(0);
    expect([...d.retractions!.added.values()]).toEqual([
      expect.objectContaining({ id: Number(R), fleet_id: 'acme', root_id: Number(s.passport.id), reason: 'passport came back forged', actor_id: Number(actor.agentId), beliefs_retracted: 4 }),
    ]);

    // Beliefs: exactly the closure, only the retraction columns, at the expected depths.
    expect(d.beliefs!.added.size).toBe(0);
    const depths: Record<string, number> = { [s.passport.id]: 0, [identity.id]: 1, [kycTier.id]: 1, [refundEligible.id]: 2 };
    expect([...d.beliefs!.changed.keys()].sort()).toEqual(Object.keys(depths).sort());
    for (const [id, { before: b, after: a }] of d.beliefs!.changed) {
      expect(changedColumns(b, a)).toEqual(['retracted_at', 'retraction_depth', 'retraction_id', 'status']);
      expect(a).toMatchObject({ status: 'RETRACTED', retraction_id: Number(R), retraction_depth: depths[id] });
      expect(b).toMatchObject({ status: 'ACTIVE', retraction_id: null, retraction_depth: null, retracted_at: null });
      expect(typeof a.embedding).toBe('string');
      expect(a.embedding).toBe(b.embedding);
    }
    // The survivor and its two justifications are untouched (no diff on justifications at all).
    expect(d.beliefs!.changed.has(loyalty.id)).toBe(false);
    expect(d.justifications).toBeUndefined();
    expect(d.justification_premises).toBeUndefined();

    // Effects: the pending payout and the mixed one are cancelled; the one running on kyc.tier is reached; nothing else.
    expect(d.effects!.added.size).toBe(0);
    expect([...d.effects!.changed.keys()].sort()).toEqual([s.pending.id, eMixed.id, eReach.id].sort());
    for (const id of [s.pending.id, eMixed.id]) {
      const { before: b, after: a } = d.effects!.changed.get(id)!;
      expect(changedColumns(b, a)).toEqual(['cancelled_at', 'cancelled_by', 'status']);
      expect(a).toMatchObject({ status: 'CANCELLED', cancelled_by: Number(R) });
      expect(b).toMatchObject({ status: 'PENDING', cancelled_by: null });
    }
    const reach = d.effects!.changed.get(eReach.id)!;
    expect(changedColumns(reach.before, reach.after)).toEqual(['reached_by']);
    expect(reach.after).toMatchObject({ status: 'EXECUTING', reached_by: Number(R) });

    // Reversals: one OWED for the refund, one UNREACHABLE for the card charge; the earlier two untouched.
    expect(d.reversals!.changed.size).toBe(0);
    expect([...d.reversals!.added.values()].map((r) => ({ ...r, id: 0, created_at: 0 }))).toEqual([
      { id: 0, fleet_id: 'acme', effect_id: Number(s.refund.id), retraction_id: Number(R), status: 'OWED', idempotency_key: 'reversal:customer:4411:refund-1',
        amount_minor: 124000, currency: 'USD', reason: null, provider_ref: null, attempts: 0, lease_expires_at: null, created_at: 0,
        dispatched_at: null, confirmed_at: null, failed_at: null },
      { id: 0, fleet_id: 'acme', effect_id: Number(s.charge.id), retraction_id: Number(R), status: 'UNREACHABLE', idempotency_key: 'reversal:customer:4411:charge-1',
        amount_minor: 8900, currency: 'USD', reason: 'effect kind card_charge has no compensation handler', provider_ref: null, attempts: 0,
        lease_expires_at: null, created_at: 0, dispatched_at: null, confirmed_at: null, failed_at: null },
    ]);

    // Events: only appended, all this retraction's, in cascade order.
    expect(d.events!.changed.size).toBe(0);
    const ev = [...d.events!.added.values()];
    expect(ev.every((e) => e.retraction_id === Number(R) && e.fleet_id === 'acme')).toBe(true);
    expect(ev.map((e) => [e.type, e.depth, e.ids])).toEqual([
      ['RetractionStarted', null, [Number(s.passport.id)]],
      ['BeliefRetracted', 0, [Number(s.passport.id)]],
      ['BeliefRetracted', 1, [Number(identity.id), Number(kycTier.id)]],
      ['BeliefRetracted', 2, [Number(refundEligible.id)]],
      ['EffectCancelled', null, [Number(s.pending.id), Number(eMixed.id)].sort((a, b) => a - b)],
      ['ReversalRecorded', null, [...d.reversals!.added.keys()].map(Number)],
      ['RetractionCommitted', null, []],
    ]);
    expect(ev.at(-1)!.data).toMatchObject({ beliefsRetracted: 4, effectsCancelled: 2, effectsReached: 2, reversalsOwed: 1, unreachable: 1 });

    // Both ways: the untouched rows named one by one, so an over-eager cascade cannot hide in the counts.
    for (const id of [shipped.id, address.id, u1.id, u2.id, loyalty.id, paid.id, h1.id]) {
      expect(after.beliefs!.get(id)).toBe(before.beliefs!.get(id));
    }
    for (const e of [ePend, eExec, eDone, eFail, ePendFail, eSurvivor, eCancelled, eRev, eUnr, s.refund, s.charge]) {
      expect(after.effects!.get(e.id)).toBe(before.effects!.get(e.id));
    }
    const states = [ePend, eExec, eDone, eFail, eCancelled].map((e) => JSON.parse(after.effects!.get(e.id)!).status);
    expect(states).toEqual(['PENDING', 'EXECUTING', 'EXECUTED', 'FAILED', 'CANCELLED']);
    expect(summary(d).claims).toBeUndefined();
    expect(summary(d).contradictions).toBeUndefined();
    await expectInvariants(t.store);
  });
});
