import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actorIn, coreOf, engines, expectInvariants, testStore, type TestDb } from '../support/engines';
import { belief, executed, passportStory, proposed } from '../support/story';
import { claimEffect, completeEffect, registerEffectKind } from '../../src/effect/effect.service';
import { retractBelief } from '../../src/retraction/retraction.service';
import { totalsFor } from '../../src/retraction/retraction.repository';
import { reversalKey } from '../../src/reversal/reversal.service';
import type { Actor, Core } from '../../src/core';
import { dump, expectUnchanged, read } from './helpers';

/** A retraction is idempotent, and an effect is reversed at most once whatever reaches it. */
describe.each(engines())('retraction idempotence on %s', (engine) => {
  let t: TestDb;
  let core: Core;
  let actor: Actor;
  beforeAll(async () => {
    t = await testStore(engine);
    core = coreOf(t.store);
    actor = await actorIn(t.store, 'idem');
  });
  afterAll(async () => t?.close());

  it('retracting twice returns the original receipt and writes nothing, even through a belief the first one took down', async () => {
    const s = await passportStory(core, actor);
    const first = await retractBelief(core, actor, { beliefId: s.passport.id, reason: 'forged' });
    expect(first.created).toBe(true);
    const before = await dump(t.store);
    expect(await retractBelief(core, actor, { beliefId: s.passport.id, reason: 'forged, again' })).toEqual({ retractionId: first.retractionId, created: false });
    // A belief that fell in the cascade answers with the retraction that took it down.
    expect(await retractBelief(core, actor, { beliefId: s.derived[1]!.id, reason: 'derived one' })).toEqual({ retractionId: first.retractionId, created: false });
    await expectUnchanged(t.store, before);
    await expectInvariants(t.store);
  });

  it('two retractions reaching one EXECUTED effect record exactly one reversal under reversal:<effect key>', async () => {
    await registerEffectKind(core, actor, { kind: 'refund', reversible: true });
    const p1 = await belief(core, actor, 'two/p1');
    const p2 = await belief(core, actor, 'two/p2');
    const e = await executed(core, actor, await proposed(core, actor, 'refund', [p1, p2], 'two:refund', 7_700), 'bank-two');
    const r1 = await retractBelief(core, actor, { beliefId: p1.id, reason: 'p1 false' });
    const r2 = await retractBelief(core, actor, { beliefId: p2.id, reason: 'p2 false' });
    expect(r2.retractionId).not.toBe(r1.retractionId);
    const revs = await read(t.store, 'idem', (tx) => tx.selectFrom('reversals').selectAll().where('effect_id', '=', e.id).execute());
    expect(revs).toHaveLength(1);
    expect(revs[0]).toMatchObject({ idempotency_key: reversalKey('two:refund'), retraction_id: r1.retractionId, status: 'OWED' });
    expect(reversalKey('two:refund')).toBe('reversal:two:refund');
    const [t1, t2] = await read(t.store, 'idem', async (tx) => [await totalsFor(tx, r1.retractionId), await totalsFor(tx, r2.retractionId)]);
    expect(t1).toMatchObject({ effectsReached: 1, reversalsOwed: 1, owed: [{ amountMinor: 7_700, currency: 'USD' }] });
    expect(t2).toMatchObject({ effectsReached: 0, reversalsOwed: 0, owed: [] });
    const recorded = await read(t.store, 'idem', (tx) => tx.selectFrom('events').select('retraction_id').where('type', '=', 'ReversalRecorded').where('retraction_id', 'in', [r1.retractionId, r2.retractionId]).execute());
    expect(recorded).toEqual([{ retraction_id: r1.retractionId }]);
    await expectInvariants(t.store);
  });

  it('two retractions reaching one EXECUTING effect: the first marks it, and completing it records one reversal under the first', async () => {
    const p1 = await belief(core, actor, 'run/p1');
    const p2 = await belief(core, actor, 'run/p2');
    const e = await proposed(core, actor, 'refund', [p1, p2], 'run:refund', 1_100);
    expect((await claimEffect(core, actor, { kinds: ['refund'] }))?.id).toBe(e.id);
    const r1 = await retractBelief(core, actor, { beliefId: p1.id, reason: 'p1 false' });
    await retractBelief(core, actor, { beliefId: p2.id, reason: 'p2 false' });
    await completeEffect(core, actor, { effectId: e.id, externalRef: 'bank-run' });
    await completeEffect(core, actor, { effectId: e.id, externalRef: 'bank-run' });
    const rows = await read(t.store, 'idem', async (tx) => ({
      effect: await tx.selectFrom('effects').select(['status', 'reached_by']).where('id', '=', e.id).executeTakeFirstOrThrow(),
      reversals: await tx.selectFrom('reversals').select(['retraction_id', 'idempotency_key']).where('effect_id', '=', e.id).execute(),
    }));
    expect(rows).toEqual({ effect: { status: 'EXECUTED', reached_by: r1.retractionId }, reversals: [{ retraction_id: r1.retractionId, idempotency_key: 'reversal:run:refund' }] });
    await expectInvariants(t.store);
  });
});
