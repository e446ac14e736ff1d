import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { actorIn, coreOf, engines, expectInvariants, testStore, type TestDb } from '../support/engines';
import { assertBelief } from '../../src/belief/belief.service';
import { DomainError } from '../../src/errors/domain-error';
import { faults, inTx, isRetryable, txStats } from '../../src/store/tx';
import type { Actor, Core } from '../../src/core';
import { domainError, dump, expectUnchanged, read } from './helpers';

/** The transaction module: serialization failures raised by the database are retried, boundedly. */
describe.each(engines())('transactions on %s', (engine) => {
  let t: TestDb;
  let core: Core;
  let actor: Actor;
  beforeAll(async () => {
    t = await testStore(engine);
    core = coreOf(t.store);
    actor = await actorIn(t.store, 'tx');
  });
  afterEach(() => {
    faults.serializationFailures = 0;
  });
  afterAll(async () => t?.close());

  it('the injected failure is a real SQLSTATE 40001 raised by the database', async () => {
    faults.serializationFailures = 1;
    let caught: unknown;
    await inTx(t.store, { fleet: 'tx', maxAttempts: 1 }, async () => 1).catch((e) => (caught = e));
    expect(caught).toBeInstanceOf(DomainError);
    expect((caught as DomainError).message).toContain('SQLSTATE 40001');
    // The same SQLSTATE straight from the server is what the retry loop recognises.
    const raw = await sql`DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = '40001'; END $$`.execute(t.store.db).catch((e) => e);
    expect(raw.code).toBe('40001');
    expect(isRetryable(raw)).toBe(true);
    expect(isRetryable({ code: '40P01' })).toBe(true);
    expect(isRetryable({ code: '23505' })).toBe(false);
  });

  it('three serialization failures in a row: assertBelief still succeeds, after exactly three retries', async () => {
    const retries = txStats.retries;
    const exhausted = txStats.exhausted;
    faults.serializationFailures = 3;
    const r = await assertBelief(core, actor, { claimKey: 'tx/retried', statement: 'written after three conflicts', value: 3 });
    expect(r.kind).toBe('asserted');
    expect(faults.serializationFailures).toBe(0);
    expect(txStats.retries - retries).toBe(3);
    expect(txStats.exhausted).toBe(exhausted);
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
    const retries = txStats.retries;
    const exhausted = txStats.exhausted;
    faults.serializationFailures = 20;
    const e = await domainError(assertBelief(core, actor, { claimKey: 'tx/given-up', statement: 'never written' }), 'CONFLICT');
    expect(e.message).toMatch(/given up after 10 attempts/);
    expect(faults.serializationFailures).toBe(10);
    expect(txStats.retries - retries).toBe(9);
    expect(txStats.exhausted - exhausted).toBe(1);
    faults.serializationFailures = 0;
    await expectUnchanged(t.store, before);
    await expectInvariants(t.store);
  });

  it('an error that is not a serialization failure is not retried and rolls the whole transaction back', async () => {
    const before = await dump(t.store);
    const retries = txStats.retries;
    let attempts = 0;
    const err = await inTx(t.store, { fleet: 'tx' }, async (tx) => {
      attempts++;
      await tx.insertInto('claims').values({ fleet_id: 'tx', key: 'tx/half-written' }).execute();
      await sql`SELECT 1/0`.execute(tx);
    }).catch((x) => x);
    expect(err.code).toBe('22012');
    expect(attempts).toBe(1);
    expect(txStats.retries).toBe(retries);
    await expectUnchanged(t.store, before);
  });
});
