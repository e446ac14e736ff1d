/**
 * The experiment-only Core option behind concurrency_eval's arm B (skipClaimLock) does what the eval claims: with it on,
 * COMMIT holds no lock on the claim row; with it off (the product), it does. Observed from a second
 * connection with FOR UPDATE NOWAIT while the COMMIT is held open at a pause point. PostgreSQL only
 * (PGlite has one connection).
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Core } from '../../src/core';
import { assertBelief } from '../../src/belief/belief.service';
import { clearPausePoints, setPausePoint } from '../../src/store/pause';
import { actorIn, coreOf, expectInvariants, testStore, type TestDb } from '../support/engines';

describe.runIf(process.env.RETRACT_TEST_DATABASE_URL)('Core.skipClaimLock (postgres)', () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await testStore('postgres');
  });
  afterEach(() => {
    clearPausePoints();
  });
  afterAll(async () => {
    await expectInvariants(db.store);
    await db.close();
  });

  /** Asserts a second value on an existing claim and, mid-COMMIT, asks another connection for the claim row with NOWAIT. */
  async function lockedMidCommit(
    claimKey: string,
    o: Pick<Core, 'skipClaimLock'> = {},
  ): Promise<{ locked: boolean; kind: string }> {
    const core = coreOf(db.store);
    const actor = await actorIn(db.store, 'switch');
    const first = await assertBelief(core, actor, { claimKey, statement: 'first value', value: 1 });
    expect(first.kind).toBe('asserted');
    const other = new pg.Client({ connectionString: db.url });
    await other.connect();
    let locked: boolean | null = null;
    setPausePoint('assertBelief:premises-locked', async () => {
      await other.query('BEGIN');
      try {
        const r = await other.query(`SELECT key FROM claims WHERE fleet_id = 'switch' AND key = $1 FOR UPDATE NOWAIT`, [
          claimKey,
        ]);
        expect(r.rowCount).toBe(1);
        locked = false;
      } catch (e) {
        expect((e as { code?: string }).code).toBe('55P03'); // lock_not_available
        locked = true;
      } finally {
        await other.query('ROLLBACK');
      }
    });
    const second = await assertBelief({ ...core, ...o }, actor, { claimKey, statement: 'second value', value: 2 });
    await other.end();
    expect(locked).not.toBeNull();
    return { locked: locked!, kind: second.kind };
  }

  it('off (the product): the claim row is locked during COMMIT', async () => {
    expect(await lockedMidCommit('switch:1/claim')).toEqual({ locked: true, kind: 'contradiction' });
  });

  it('on: the claim row is not locked, and COMMIT still decides the same way', async () => {
    expect(await lockedMidCommit('switch:2/claim', { skipClaimLock: true })).toEqual({
      locked: false,
      kind: 'contradiction',
    });
  });
});
