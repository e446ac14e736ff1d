import { describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { actorIn, coreOf, engines, expectInvariants, type TestDb } from '../support/engines';
import { passportStory } from '../support/story';
import { previewRetraction, retractBelief } from '../../src/retraction/retraction.service';
import { totalsFor } from '../../src/retraction/retraction.repository';
import { confirmReversal } from '../../src/reversal/reversal.service';
import { inTx } from '../../src/store/tx';
import { storeSuite } from '../support/helpers';

describe.each(engines())('passport story on %s', (engine) => {
  let t: TestDb;
  storeSuite(engine, {}, (s) => (t = s.t));

  it('retracting the forged passport takes down the derived beliefs, cancels the pending payout, owes the refund once and names the card charge unreachable', async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, 'acme');
    const s = await passportStory(core, actor);
    await expectInvariants(t.store);

    const preview = await previewRetraction(core, actor, { beliefId: s.passport.id });
    expect(preview.beliefs.totalCount).toBe(4);
    expect(preview.pendingEffects).toEqual([s.pending.id]);
    expect(preview.executedEffects.sort()).toEqual([s.refund.id, s.charge.id].sort());
    expect(preview.survivors).toEqual([]);

    const { retractionId, created } = await retractBelief(core, actor, {
      beliefId: s.passport.id,
      reason: 'passport came back forged',
    });
    expect(created).toBe(true);
    const totals = await inTx(t.store, { fleet: 'acme', readOnly: true }, (tx) => totalsFor(tx, 'acme', retractionId));
    expect(totals).toEqual({
      beliefsRetracted: 4,
      effectsCancelled: 1,
      effectsReached: 2,
      reversalsOwed: 1,
      unreachable: 1,
      exposure: [{ amountMinor: '132900', currency: 'USD' }],
      owed: [{ amountMinor: '124000', currency: 'USD' }],
      unreachableAmount: [{ amountMinor: '8900', currency: 'USD' }],
      settled: [{ amountMinor: '0', currency: 'USD' }],
    });
    expect(preview.totals).toEqual(totals);

    const rows = await inTx(t.store, { fleet: 'acme', readOnly: true }, async (tx) => ({
      beliefs: await tx
        .selectFrom('beliefs')
        .select(['id', 'status', 'retraction_id', 'retraction_depth'])
        .orderBy('id')
        .execute(),
      effects: await tx.selectFrom('effects').select(['id', 'status', 'cancelled_by']).orderBy('id').execute(),
      reversals: await tx
        .selectFrom('reversals')
        .select(['effect_id', 'status', 'idempotency_key', 'amount_minor'])
        .orderBy('effect_id')
        .execute(),
    }));
    expect(rows.beliefs.every((b) => b.status === 'RETRACTED' && b.retraction_id === retractionId)).toBe(true);
    expect(rows.beliefs.map((b) => b.retraction_depth)).toEqual([0, 1, 2, 1]);
    expect(rows.effects.find((e) => e.id === s.pending.id)).toMatchObject({
      status: 'CANCELLED',
      cancelled_by: retractionId,
    });
    expect(rows.reversals).toEqual([
      {
        effect_id: s.refund.id,
        status: 'OWED',
        idempotency_key: 'reversal:customer:4411:refund-1',
        amount_minor: '124000',
      },
      {
        effect_id: s.charge.id,
        status: 'UNREACHABLE',
        idempotency_key: 'reversal:customer:4411:charge-1',
        amount_minor: '8900',
      },
    ]);
    await expectInvariants(t.store);

    // Retracting again returns the original receipt and writes nothing.
    const events = await sql<{ n: number }>`SELECT count(*)::int AS n FROM events`.execute(t.store.db);
    const again = await retractBelief(core, actor, { beliefId: s.passport.id, reason: 'again' });
    expect(again).toEqual({ retractionId, created: false });
    const events2 = await sql<{ n: number }>`SELECT count(*)::int AS n FROM events`.execute(t.store.db);
    expect(events2.rows[0]!.n).toBe(events.rows[0]!.n);

    // Settled moves only on a provider's confirmation.
    const owed = await inTx(t.store, { fleet: 'acme', readOnly: true }, (tx) =>
      tx.selectFrom('reversals').select('id').where('status', '=', 'OWED').executeTakeFirstOrThrow(),
    );
    await confirmReversal(core, actor, { reversalId: owed.id, providerRef: 'prv_abc123' });
    const after = await inTx(t.store, { fleet: 'acme', readOnly: true }, (tx) => totalsFor(tx, 'acme', retractionId));
    expect(after.settled).toEqual([{ amountMinor: '124000', currency: 'USD' }]);
    expect(after.owed).toEqual([{ amountMinor: '124000', currency: 'USD' }]);
    await expectInvariants(t.store);
  });
});
