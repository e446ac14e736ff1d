import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { actorIn, coreOf, engines, expectInvariants, testStore, type TestDb } from '../support/engines';
import { asserted, passportStory, proposed } from '../support/story';
import { addJustification, assertBelief } from '../../src/belief/belief.service';
import { claimEffect, completeEffect, failEffect, proposeEffect } from '../../src/effect/effect.service';
import { previewRetraction, retractBelief } from '../../src/retraction/retraction.service';
import { confirmReversal } from '../../src/reversal/reversal.service';
import { inTx } from '../../src/store/tx';
import type { Actor, Core } from '../../src/core';
import { type Dump, TABLES, diff, domainError, dump, expectUnchanged, read } from './helpers';

/** The rows of one fleet in a dump (fleets by id, every other table by fleet_id), as JSON text. */
function fleetRows(d: Dump, fleet: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const table of Object.keys(TABLES)) {
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
    t = await testStore(engine);
    core = coreOf(t.store);
    a = await actorIn(t.store, 'a');
    b = await actorIn(t.store, 'b');
    sa = await passportStory(core, a);
    sb = await passportStory(core, b);
  });
  afterAll(async () => t?.close());

  it('a retraction in fleet a leaves every one of fleet b\'s rows byte-for-byte unchanged', async () => {
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
      for (const row of [...x.added.values(), ...[...x.changed.values()].map((c) => c.after)]) expect({ table, fleet: row.fleet_id }).toEqual({ table, fleet: 'a' });
    }
    const reversalsA = await read(t.store, 'a', (tx) => tx.selectFrom('reversals').select(['id', 'retraction_id']).execute());
    expect(reversalsA.every((r) => r.retraction_id === retractionId)).toBe(true);
    expect(reversalsA).toHaveLength(2);
    await expectInvariants(t.store);
  });

  it('fleet b\'s agent calling services on fleet a\'s ids gets NOT_FOUND, and nothing is written', async () => {
    // Fleet a now has a retraction, reversals, a cancelled effect; give it an EXECUTING one too.
    const x = asserted(await assertBelief(core, a, { claimKey: 'iso/x', statement: 'x', value: 1 }));
    const running = await proposed(core, a, 'refund', [x], 'iso:run', 10);
    expect((await claimEffect(core, a, { kinds: ['refund'] }))?.id).toBe(running.id);
    const reversalA = await read(t.store, 'a', (tx) => tx.selectFrom('reversals').select('id').where('status', '=', 'OWED').executeTakeFirstOrThrow());
    const aliveA = x.id;

    const before = await dump(t.store);
    await domainError(retractBelief(core, b, { beliefId: aliveA, reason: 'cross-fleet' }), 'NOT_FOUND', 'beliefId');
    await domainError(previewRetraction(core, b, { beliefId: aliveA }), 'NOT_FOUND', 'beliefId');
    await domainError(addJustification(core, b, { beliefId: aliveA, premises: [sb.passport.id] }), 'NOT_FOUND', 'beliefId');
    await domainError(addJustification(core, b, { beliefId: sb.derived[0]!.id, premises: [aliveA] }), 'NOT_FOUND', 'premises');
    await domainError(proposeEffect(core, b, { kind: 'refund', supportedBy: [aliveA], idempotencyKey: 'iso:cross' }), 'NOT_FOUND', 'supportedBy');
    await domainError(completeEffect(core, b, { effectId: running.id, externalRef: 'stolen' }), 'NOT_FOUND', 'effectId');
    await domainError(failEffect(core, b, { effectId: running.id, reason: 'sabotage' }), 'NOT_FOUND', 'effectId');
    await domainError(confirmReversal(core, b, { reversalId: reversalA.id, providerRef: 'prv_fake' }), 'NOT_FOUND', 'reversalId');
    // A belief derived from another fleet's belief is refused the same way.
    await domainError(assertBelief(core, b, { claimKey: 'iso/y', statement: 'y', derivedFrom: [aliveA] }), 'NOT_FOUND', 'derivedFrom');
    // Fleet b's executor does not see fleet a's ready work; the same idempotency key is per fleet.
    expect(await claimEffect(core, b, { kinds: ['refund'] })).toBeNull();
    await expectUnchanged(t.store, before);
    const sameKey = await proposeEffect(core, b, { kind: 'refund', supportedBy: [sb.derived[0]!.id], idempotencyKey: 'iso:run' });
    expect(sameKey).toMatchObject({ kind: 'proposed', created: true, effect: { fleet_id: 'b' } });
    await expectInvariants(t.store);
  });

  it('row-level security: an unfiltered query in fleet b\'s transaction sees only fleet b\'s rows, and writing a row for fleet a is refused (42501)', async () => {
    const all = await dump(t.store);
    const rowsOf = (table: string, fleet: string) => fleetRows(all, fleet)[table]!.map((j) => JSON.parse(j) as Record<string, unknown>);
    for (const table of ['beliefs', 'effects', 'reversals', 'events', 'agents', 'claims', 'justifications', 'effect_supports', 'retractions', 'fleets', 'effect_kinds']) {
      const seen = await inTx(t.store, { fleet: 'b' }, async (tx) => (await sql<Record<string, unknown>>`SELECT * FROM ${sql.table(table)}`.execute(tx)).rows);
      const expected = rowsOf(table, 'b');
      expect({ table, n: seen.length }).toEqual({ table, n: expected.length });
      expect(seen.every((r) => (table === 'fleets' ? r.id : r.fleet_id) === 'b')).toBe(true);
      // Fleet a has rows there too (or the check proves nothing).
      expect({ table, a: rowsOf(table, 'a').length > 0 }).toEqual({ table, a: true });
      const none = await inTx(t.store, { fleet: null, readOnly: true }, async (tx) => (await sql`SELECT * FROM ${sql.table(table)}`.execute(tx)).rows);
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
    expect(await insert(sql`UPDATE beliefs SET fleet_id = 'a' WHERE fleet_id = 'b'`)).toBe('42501');
    const touched = await inTx(t.store, { fleet: 'b' }, (tx) => sql`UPDATE beliefs SET statement = 'defaced' WHERE id = ${sa.passport.id}`.execute(tx));
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
