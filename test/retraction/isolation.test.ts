import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actorIn, coreOf, engines, expectInvariants, type TestDb } from '../support/engines';
import { belief, executed, passportStory, proposed, asserted } from '../support/story';
import { assertBelief, addJustification } from '../../src/belief/belief.service';
import {
  claimEffect,
  failEffect,
  registerEffectKind,
  completeEffect,
  proposeEffect,
} from '../../src/effect/effect.service';
import type { EffectRow } from '../../src/effect/effect.repository';
import { retractBelief, previewRetraction } from '../../src/retraction/retraction.service';
import { confirmReversal } from '../../src/reversal/reversal.service';
import type { Actor, Core } from '../../src/core';
import {
  changedColumns,
  diff,
  dump,
  read,
  summary,
  type Dump,
  domainError,
  expectUnchanged,
  fileStore,
  closeFileStores,
  storeSuite,
} from '../support/helpers';
import { sql } from 'kysely';
import { inTx } from '../../src/store/tx';

/** Exactness and isolation: a retraction changes its closure and nothing else, in its own fleet only. */
afterAll(closeFileStores);

/** The reversal columns of the core schema (0001); asserted in full. */
const REVERSAL_COLUMNS = new Set([
  'id',
  'fleet_id',
  'effect_id',
  'retraction_id',
  'status',
  'idempotency_key',
  'amount_minor',
  'currency',
  'reason',
  'provider_ref',
  'attempts',
  'lease_expires_at',
  'created_at',
  'dispatched_at',
  'confirmed_at',
  'failed_at',
]);

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
  storeSuite(engine, { shared: true }, (s) => (t = s.t));

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
    const alt = await assertBelief(core, actor, {
      claimKey: 'customer:4411/loyalty.points',
      statement: 'loyalty from address',
      value: 120,
      derivedFrom: [address.id],
    });
    expect(alt.kind).toBe('corroborated');

    const ePend = await proposed(core, actor, 'notify', [u1], 'u:pending', 100);
    const eExec = await proposed(core, actor, 'ship', [u2], 'u:executing', 2_500);
    await claimed(core, actor, eExec);
    const eDone = await executed(
      core,
      actor,
      await proposed(core, actor, 'ship', [u1], 'u:executed', 3_000),
      'ship-ref-1',
    );
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
    const eRev = await executed(
      core,
      actor,
      await proposed(core, actor, 'ship', [h1], 'h:reversed', 4_200),
      'ship-ref-2',
    );
    const eUnr = await executed(
      core,
      actor,
      await proposed(core, actor, 'card_charge', [h1], 'h:unreachable', 990),
      'card-ref-2',
    );
    const earlier = await retractBelief(core, actor, { beliefId: paid.id, reason: 'payment bounced' });
    const revs = await read(t.store, 'acme', (tx) => tx.selectFrom('reversals').selectAll().orderBy('id').execute());
    expect(revs.map((r) => [r.effect_id, r.status])).toEqual([
      [eRev.id, 'OWED'],
      [eUnr.id, 'UNREACHABLE'],
    ]);
    await confirmReversal(core, actor, { reversalId: revs[0]!.id, providerRef: 'prv_777' });
    // A contradiction on an unrelated claim.
    const c = await assertBelief(core, actor, {
      claimKey: 'order:77/shipped',
      statement: 'order 77 never left',
      value: false,
    });
    expect(c.kind).toBe('contradiction');

    // Effects that touch the passport's closure.
    const eMixed = await proposed(core, actor, 'notify', [refundEligible, u1], 'x:mixed');
    const eReach = await proposed(core, actor, 'ship', [kycTier], 'x:executing-on-kyc', 1_000);
    await claimed(core, actor, eReach);
    await expectInvariants(t.store);

    const before = await dump(t.store);
    expect(Object.keys(before)).toEqual(
      expect.arrayContaining([
        'fleets',
        'agents',
        'claims',
        'retractions',
        'beliefs',
        'justifications',
        'justification_premises',
        'effect_kinds',
        'effects',
        'effect_supports',
        'reversals',
        'contradictions',
        'adjudication_leases',
        'events',
        'store_meta',
        'kysely_migration',
      ]),
    );
    const { retractionId: R, created } = await retractBelief(core, actor, {
      beliefId: s.passport.id,
      reason: 'passport came back forged',
    });
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
      expect.objectContaining({
        id: Number(R),
        fleet_id: 'acme',
        root_id: Number(s.passport.id),
        reason: 'passport came back forged',
        actor_id: Number(actor.agentId),
        beliefs_retracted: 4,
      }),
    ]);

    // Beliefs: exactly the closure, only the retraction columns, at the expected depths.
    expect(d.beliefs!.added.size).toBe(0);
    const depths: Record<string, number> = {
      [s.passport.id]: 0,
      [identity.id]: 1,
      [kycTier.id]: 1,
      [refundEligible.id]: 2,
    };
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
    const added = [...d.reversals!.added.values()];
    expect(added).toHaveLength(2);
    // Columns a later migration adds (dispatch bookkeeping) start empty.
    for (const r of added)
      for (const [col, val] of Object.entries(r))
        if (!REVERSAL_COLUMNS.has(col)) expect({ col, val }).toEqual({ col, val: null });
    expect(
      added.map((r) => ({
        ...Object.fromEntries(Object.entries(r).filter(([col]) => REVERSAL_COLUMNS.has(col))),
        id: 0,
        created_at: 0,
      })),
    ).toEqual([
      {
        id: 0,
        fleet_id: 'acme',
        effect_id: Number(s.refund.id),
        retraction_id: Number(R),
        status: 'OWED',
        idempotency_key: 'reversal:customer:4411:refund-1',
        amount_minor: 124000,
        currency: 'USD',
        reason: null,
        provider_ref: null,
        attempts: 0,
        lease_expires_at: null,
        created_at: 0,
        dispatched_at: null,
        confirmed_at: null,
        failed_at: null,
      },
      {
        id: 0,
        fleet_id: 'acme',
        effect_id: Number(s.charge.id),
        retraction_id: Number(R),
        status: 'UNREACHABLE',
        idempotency_key: 'reversal:customer:4411:charge-1',
        amount_minor: 8900,
        currency: 'USD',
        reason: 'effect kind card_charge has no compensation handler',
        provider_ref: null,
        attempts: 0,
        lease_expires_at: null,
        created_at: 0,
        dispatched_at: null,
        confirmed_at: null,
        failed_at: null,
      },
    ]);

    // Events: only appended, all this retraction's, in cascade order.
    expect(d.events!.changed.size).toBe(0);
    const ev = [...d.events!.added.values()];
    expect(ev.every((e) => e.retraction_id === Number(R) && e.fleet_id === 'acme')).toBe(true);
    // The cascade's small levels share one row (depth = its first level, data.levels = their sizes).
    expect(ev.map((e) => [e.type, e.depth, e.ids])).toEqual([
      ['RetractionStarted', null, [Number(s.passport.id)]],
      [
        'BeliefRetracted',
        0,
        [Number(s.passport.id), Number(identity.id), Number(kycTier.id), Number(refundEligible.id)],
      ],
      ['EffectCancelled', null, [Number(s.pending.id), Number(eMixed.id)].sort((a, b) => a - b)],
      ['ReversalRecorded', null, [...d.reversals!.added.keys()].map(Number)],
      ['RetractionCommitted', null, []],
    ]);
    expect(ev[1]!.data).toEqual({ levels: [1, 2, 1] });
    expect(ev.at(-1)!.data).toMatchObject({
      beliefsRetracted: 4,
      effectsCancelled: 2,
      effectsReached: 2,
      reversalsOwed: 1,
      unreachable: 1,
    });

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

/** The rows of one fleet in a dump (fleets by id, every other table by fleet_id), as JSON text. */
function fleetRows(d: Dump, fleet: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const table of Object.keys(d)) {
    out[table] = [...d[table]!.values()].filter((j) => {
      const row = JSON.parse(j) as Record<string, unknown>;
      return table === 'fleets' ? row.id === fleet : row.fleet_id === fleet;
    });
  }
  return out;
}

/** Fleets are tenants: same claim keys, same story, and not one row crosses — in code and in the database. */
describe.each(engines())('fleet isolation on %s', (engine) => {
  let t: TestDb;
  let core: Core;
  let a: Actor;
  let b: Actor;
  let sa: Awaited<ReturnType<typeof passportStory>>;
  let sb: Awaited<ReturnType<typeof passportStory>>;
  beforeAll(async () => {
    t = await fileStore(engine);
    core = coreOf(t.store);
    a = await actorIn(t.store, 'a');
    b = await actorIn(t.store, 'b');
    sa = await passportStory(core, a);
    sb = await passportStory(core, b);
  });

  it("a retraction in fleet a leaves every one of fleet b's rows byte-for-byte unchanged", async () => {
    expect(sa.passport.claim_key).toBe(sb.passport.claim_key);
    const before = await dump(t.store);
    const bBefore = fleetRows(before, 'b');
    expect(bBefore.beliefs).toHaveLength(4);
    expect(bBefore.effects).toHaveLength(3);
    const { retractionId } = await retractBelief(core, a, { beliefId: sa.passport.id, reason: 'forged' });
    const after = await dump(t.store);
    expect(fleetRows(after, 'b')).toEqual(bBefore);
    // Everything that did change is fleet a's.
    for (const [table, x] of Object.entries(diff(before, after))) {
      for (const row of [...x.added.values(), ...[...x.changed.values()].map((c) => c.after)])
        expect({ table, fleet: row.fleet_id }).toEqual({ table, fleet: 'a' });
    }
    const reversalsA = await read(t.store, 'a', (tx) =>
      tx.selectFrom('reversals').select(['id', 'retraction_id']).execute(),
    );
    expect(reversalsA.every((r) => r.retraction_id === retractionId)).toBe(true);
    expect(reversalsA).toHaveLength(2);
    await expectInvariants(t.store);
  });

  it("fleet b's agent calling services on fleet a's ids gets NOT_FOUND, and nothing is written", async () => {
    // Fleet a now has a retraction, reversals, a cancelled effect; give it an EXECUTING one too.
    const x = asserted(await assertBelief(core, a, { claimKey: 'iso/x', statement: 'x', value: 1 }));
    const running = await proposed(core, a, 'refund', [x], 'iso:run', 10);
    expect((await claimEffect(core, a, { kinds: ['refund'] }))?.id).toBe(running.id);
    const reversalA = await read(t.store, 'a', (tx) =>
      tx.selectFrom('reversals').select('id').where('status', '=', 'OWED').executeTakeFirstOrThrow(),
    );
    const aliveA = x.id;

    const before = await dump(t.store);
    await domainError(retractBelief(core, b, { beliefId: aliveA, reason: 'cross-fleet' }), 'NOT_FOUND', 'beliefId');
    await domainError(previewRetraction(core, b, { beliefId: aliveA }), 'NOT_FOUND', 'beliefId');
    await domainError(
      addJustification(core, b, { beliefId: aliveA, premises: [sb.passport.id] }),
      'NOT_FOUND',
      'beliefId',
    );
    await domainError(
      addJustification(core, b, { beliefId: sb.derived[0]!.id, premises: [aliveA] }),
      'NOT_FOUND',
      'premises',
    );
    await domainError(
      proposeEffect(core, b, { kind: 'refund', supportedBy: [aliveA], idempotencyKey: 'iso:cross' }),
      'NOT_FOUND',
      'supportedBy',
    );
    await domainError(
      completeEffect(core, b, { effectId: running.id, externalRef: 'stolen' }),
      'NOT_FOUND',
      'effectId',
    );
    await domainError(failEffect(core, b, { effectId: running.id, reason: 'sabotage' }), 'NOT_FOUND', 'effectId');
    await domainError(
      confirmReversal(core, b, { reversalId: reversalA.id, providerRef: 'prv_fake' }),
      'NOT_FOUND',
      'reversalId',
    );
    // A belief derived from another fleet's belief is refused the same way.
    await domainError(
      assertBelief(core, b, { claimKey: 'iso/y', statement: 'y', derivedFrom: [aliveA] }),
      'NOT_FOUND',
      'derivedFrom',
    );
    // Fleet b's executor does not see fleet a's ready work; the same idempotency key is per fleet.
    expect(await claimEffect(core, b, { kinds: ['refund'] })).toBeNull();
    await expectUnchanged(t.store, before);
    const sameKey = await proposeEffect(core, b, {
      kind: 'refund',
      supportedBy: [sb.derived[0]!.id],
      idempotencyKey: 'iso:run',
    });
    expect(sameKey).toMatchObject({ kind: 'proposed', created: true, effect: { fleet_id: 'b' } });
    await expectInvariants(t.store);
  });

  it("row-level security: an unfiltered query in fleet b's transaction sees only fleet b's rows, and writing a row for fleet a is refused (42501)", async () => {
    const all = await dump(t.store);
    const rowsOf = (table: string, fleet: string) =>
      fleetRows(all, fleet)[table]!.map((j) => JSON.parse(j) as Record<string, unknown>);
    for (const table of [
      'beliefs',
      'effects',
      'reversals',
      'events',
      'agents',
      'claims',
      'justifications',
      'effect_supports',
      'retractions',
      'fleets',
      'effect_kinds',
    ]) {
      const seen = await inTx(
        t.store,
        { fleet: 'b' },
        async (tx) => (await sql<Record<string, unknown>>`SELECT * FROM ${sql.table(table)}`.execute(tx)).rows,
      );
      const expected = rowsOf(table, 'b');
      expect({ table, n: seen.length }).toEqual({ table, n: expected.length });
      expect(seen.every((r) => (table === 'fleets' ? r.id : r.fleet_id) === 'b')).toBe(true);
      // Fleet a has rows there too (or the check proves nothing).
      expect({ table, a: rowsOf(table, 'a').length > 0 }).toEqual({ table, a: true });
      const none = await inTx(
        t.store,
        { fleet: null, readOnly: true },
        async (tx) => (await sql`SELECT * FROM ${sql.table(table)}`.execute(tx)).rows,
      );
      expect({ table, none: none.length }).toEqual({ table, none: 0 });
    }

    const before = await dump(t.store);
    const insert = async (q: ReturnType<typeof sql>) => {
      let code: string | undefined;
      await inTx(t.store, { fleet: 'b' }, (tx) => q.execute(tx)).catch((e) => (code = (e as { code?: string }).code));
      return code;
    };
    expect(await insert(sql`INSERT INTO events (fleet_id, type) VALUES ('a', 'BeliefAsserted')`)).toBe('42501');
    expect(await insert(sql`INSERT INTO claims (fleet_id, key) VALUES ('a', 'smuggled')`)).toBe('42501');
    expect(await insert(sql`INSERT INTO fleets (id) VALUES ('c')`)).toBe('42501');
    // Moving one of b's own rows into fleet a is refused too; updating a's rows from b touches none.
    // (Citus refuses it before RLS is asked: a row's distribution column cannot change, 0A000.)
    expect(await insert(sql`UPDATE beliefs SET fleet_id = 'a' WHERE fleet_id = 'b'`)).toBe(
      engine === 'citus' ? '0A000' : '42501',
    );
    const touched = await inTx(t.store, { fleet: 'b' }, (tx) =>
      sql`UPDATE beliefs SET statement = 'defaced' WHERE id = ${sa.passport.id}`.execute(tx),
    );
    expect(Number(touched.numAffectedRows)).toBe(0);
    // Turning row security off does not bypass it for the application role: the query is refused instead.
    const off = await inTx(t.store, { fleet: 'b' }, async (tx) => {
      await sql`SET LOCAL row_security = off`.execute(tx);
      return sql`SELECT count(*) FROM beliefs`.execute(tx);
    }).catch((e) => (e as { code?: string }).code);
    expect(off).toBe('42501');
    await expectUnchanged(t.store, before);
    await expectInvariants(t.store);
  });
});
