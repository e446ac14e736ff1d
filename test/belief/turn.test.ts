import { describe, expect, it } from 'vitest';
import { engines, expectInvariants, type TestDb } from '../support/engines';
import { asserted, belief } from '../support/story';
import { assertBelief } from '../../src/belief/belief.service';
import { takeReadPoint } from '../../src/belief/snapshot';
import { retractBelief } from '../../src/retraction/retraction.service';
import { readTx } from '../../src/store/tx';
import type { Actor, Core } from '../../src/core';
import { diff, domainError, dump, expectUnchanged, read, storeSuite, summary } from '../support/helpers';

/** READ → THINK → COMMIT: what assertBelief decides when the world moved in between. */
describe.each(engines())('the turn on %s', (engine) => {
  let t: TestDb;
  let core: Core;
  let alice: Actor;
  let bob: Actor;
  storeSuite(engine, { fleet: 'turn', agents: ['alice', 'bob'] }, (s) => {
    ({ t, core } = s);
    alice = s.agents.alice!;
    bob = s.agents.bob!;
  });

  const readPoint = () => readTx(t.store, 'turn', (tx) => takeReadPoint(tx, 'turn'));

  it('a premise retracted between READ and COMMIT: premiseRetracted, and nothing is written', async () => {
    const premise = await belief(core, alice, 'turn1/premise');
    const other = await belief(core, alice, 'turn1/other');
    const snapshot = await readPoint(); // READ: the premise is ACTIVE here
    await retractBelief(core, bob, { beliefId: premise.id, reason: 'turned out false' });
    const before = await dump(t.store);
    for (const basedOn of [undefined, snapshot]) {
      const r = await assertBelief(core, alice, {
        claimKey: 'turn1/conclusion',
        statement: 'conclusion holds',
        value: true,
        derivedFrom: [other.id, premise.id],
        basedOn,
      });
      expect(r.kind).toBe('premiseRetracted');
      if (r.kind === 'premiseRetracted') expect(r.premise).toMatchObject({ id: premise.id, status: 'RETRACTED' });
    }
    // Also when the claim already holds a belief (nothing corroborated, no justification added).
    const held = await belief(core, alice, 'turn1/held', [other]);
    const before2 = await dump(t.store);
    const r2 = await assertBelief(core, alice, {
      claimKey: 'turn1/held',
      statement: 'held',
      value: true,
      derivedFrom: [premise.id],
    });
    expect(r2.kind).toBe('premiseRetracted');
    await expectUnchanged(t.store, before2);
    expect(held.status).toBe('ACTIVE');
    // The first refusal wrote nothing either: the only rows since `before` belong to `held`.
    const d = summary(diff(before, before2));
    expect(Object.keys(d).sort()).toEqual(['beliefs', 'claims', 'events', 'justification_premises', 'justifications']);
    expect(d.claims).toEqual({ added: ['turn|turn1/held'], removed: [], changed: [] });
    await expectInvariants(t.store);
  });

  it('basedOn: another agent wrote the claim after READ → claimChanged, nothing written; without basedOn → contradiction or corroboration', async () => {
    const snapshot = await readPoint(); // READ: no belief on the claim yet
    const bobs = asserted(
      await assertBelief(core, bob, { claimKey: 'turn2/price', statement: 'the price is 10', value: 10 }),
    );
    const before = await dump(t.store);
    const changed = await assertBelief(core, alice, {
      claimKey: 'turn2/price',
      statement: 'the price is 12',
      value: 12,
      basedOn: snapshot,
    });
    expect(changed).toMatchObject({
      kind: 'claimChanged',
      claimKey: 'turn2/price',
      current: { id: bobs.id, value: 10 },
    });
    const same = await assertBelief(core, alice, {
      claimKey: 'turn2/price',
      statement: 'the price is 10',
      value: 10,
      basedOn: snapshot,
    });
    expect(same.kind).toBe('claimChanged');
    await expectUnchanged(t.store, before);

    // A fresh READ sees Bob's write, so COMMIT goes ahead.
    const fresh = await readPoint();
    const corroborated = await assertBelief(core, alice, {
      claimKey: 'turn2/price',
      statement: 'it costs ten',
      value: 10,
      basedOn: fresh,
    });
    expect(corroborated).toMatchObject({ kind: 'corroborated', belief: { id: bobs.id } });
    const contradiction = await assertBelief(core, alice, {
      claimKey: 'turn2/price',
      statement: 'the price is 12',
      value: 12,
    });
    expect(contradiction.kind).toBe('contradiction');
    // An unrelated claim written after READ does not stop a COMMIT on this one.
    const unrelated = await assertBelief(core, alice, {
      claimKey: 'turn2/untouched',
      statement: 'untouched',
      value: 1,
      basedOn: snapshot,
    });
    expect(unrelated.kind).toBe('asserted');
    await expectInvariants(t.store);
  });

  it("a read point is opaque and fleet-bound: garbage or another fleet's snapshot is BAD_USER_INPUT on basedOn", async () => {
    const foreign = await readTx(t.store, 'elsewhere', (tx) => takeReadPoint(tx, 'elsewhere'));
    const before = await dump(t.store);
    await domainError(
      assertBelief(core, alice, { claimKey: 'turn3/x', statement: 'x', basedOn: foreign }),
      'BAD_USER_INPUT',
      'basedOn',
    );
    await domainError(
      assertBelief(core, alice, { claimKey: 'turn3/x', statement: 'x', basedOn: 'not-a-snapshot' }),
      'BAD_USER_INPUT',
      'basedOn',
    );
    await expectUnchanged(t.store, before);
  });

  it('same value → corroborated, and derivedFrom becomes an alternative justification that keeps the belief standing', async () => {
    const a = await belief(core, alice, 'corr/a');
    const x = await belief(core, bob, 'corr/x');
    const d = await belief(core, alice, 'corr/d', [a], { tier: 'gold' });
    const r = await assertBelief(core, bob, {
      claimKey: 'corr/d',
      statement: 'tier is gold, from x',
      value: { tier: 'gold' },
      derivedFrom: [x.id],
    });
    expect(r).toMatchObject({ kind: 'corroborated', belief: { id: d.id, status: 'ACTIVE' } });
    const js = await read(t.store, 'turn', (tx) =>
      tx
        .selectFrom('justifications')
        .innerJoin('justification_premises', (j) =>
          j
            .onRef('justification_premises.fleet_id', '=', 'justifications.fleet_id')
            .onRef('justification_id', '=', 'justifications.id'),
        )
        .select(['premise_id', 'created_by'])
        .where('justifications.fleet_id', '=', 'turn')
        .where('belief_id', '=', d.id)
        .orderBy('justifications.id')
        .execute(),
    );
    expect(js).toEqual([
      { premise_id: a.id, created_by: alice.agentId },
      { premise_id: x.id, created_by: bob.agentId },
    ]);
    // Corroborating again with the same premises adds nothing but the event.
    const before = await dump(t.store);
    expect(
      (
        await assertBelief(core, bob, {
          claimKey: 'corr/d',
          statement: 'again',
          value: { tier: 'gold' },
          derivedFrom: [x.id],
        })
      ).kind,
    ).toBe('corroborated');
    const dd = summary(diff(before, await dump(t.store)));
    expect(Object.keys(dd)).toEqual(['events']);

    await retractBelief(core, alice, { beliefId: a.id, reason: 'a false' });
    const after = await read(t.store, 'turn', (tx) =>
      tx.selectFrom('beliefs').select('status').where('id', '=', d.id).executeTakeFirstOrThrow(),
    );
    expect(after.status).toBe('ACTIVE');
    await expectInvariants(t.store);
  });

  it("different value → a contradiction row; the claim's ACTIVE belief and claim row are unchanged", async () => {
    const p = await belief(core, alice, 'contra/p');
    const existing = await belief(core, alice, 'contra/status', [], 'open');
    const before = await dump(t.store);
    const r = await assertBelief(core, bob, {
      claimKey: 'contra/status',
      statement: 'the status is closed',
      value: 'closed',
      evidence: 'ticket 9',
      derivedFrom: [p.id],
    });
    expect(r.kind).toBe('contradiction');
    if (r.kind !== 'contradiction') throw new Error('unreachable');
    const d = diff(before, await dump(t.store));
    expect(Object.keys(d).sort()).toEqual(['contradictions', 'events']);
    const row = d.contradictions!.added.get(r.contradictionId)!;
    expect(row).toMatchObject({
      fleet_id: 'turn',
      claim_key: 'contra/status',
      existing_id: Number(existing.id),
      proposed_statement: 'the status is closed',
      proposed_value: 'closed',
      proposed_evidence: 'ticket 9',
      proposed_author_id: Number(bob.agentId),
      proposed_derived_from: [Number(p.id)],
      status: 'OPEN',
      verdict: null,
    });
    expect([...d.events!.added.values()].map((e) => [e.type, e.ids])).toEqual([
      ['ContradictionRaised', [Number(r.contradictionId)]],
    ]);
    // null vs a value is a difference too; an equal JSON value written in another key order is the same.
    expect((await assertBelief(core, bob, { claimKey: 'contra/status', statement: 'unknown', value: null })).kind).toBe(
      'contradiction',
    );
    await belief(core, alice, 'contra/obj', [], { a: 1, b: [1, 2] });
    expect(
      (await assertBelief(core, bob, { claimKey: 'contra/obj', statement: 'same', value: { b: [1, 2], a: 1 } })).kind,
    ).toBe('corroborated');
    await expectInvariants(t.store);
  });
});
