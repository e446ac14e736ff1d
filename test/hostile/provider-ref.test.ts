import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core';
import { signBody } from '../../src/reversal/provider';
import { gid } from '../../src/kernel/ids';
import { EDGE, foldRef } from '../../src/kernel/provider-ref';
import { codes, gql, ok, type GqlResponse } from '../support/api-client';
import { type ApiServer, startApiServer, tableDigests } from '../support/api-server';
import { owedReversals, type OwedReversal } from '../support/dispatch-fixtures';
import { actorIn, engines, expectInvariants } from '../support/engines';

/**
 * Issue 15, item 2: a provider reference must be the provider's, never one RETRACT issued. Each case
 * below was accepted before (marked CONFIRMED and summed into `settled`); each must now be refused
 * with BAD_USER_INPUT naming `providerRef`, and write nothing.
 */
const SECRET = 'whsec_provider_ref_test_0123456789';
const CONFIRM = 'mutation($i: ConfirmReversalInput!) { confirmReversal(input: $i) { id status providerRef } }';
const SETTLED = 'query($id: ID!) { retraction(id: $id) { totals { settled { amountMinor currency } } } }';

describe.each(engines())('providerRef: references we issued are refused on %s', (engine) => {
  let s: ApiServer;
  let actor: Actor & { token: string };
  let n = 0;

  beforeAll(async () => {
    s = await startApiServer(engine, { config: { providerSecret: SECRET } });
    actor = await actorIn(s.db.store, 'refs');
  });
  afterAll(async () => {
    if (s) await expectInvariants(s.db.store);
    await s?.close();
  });

  /** A fresh OWED reversal (its effect executed, its premise retracted) for each case. */
  async function owed(): Promise<OwedReversal & { retractionId: string }> {
    const { retractionId, reversals } = await owedReversals(s.core, actor, 1, { prefix: `pr${++n}` });
    return { ...reversals[0]!, retractionId };
  }

  const confirm = (reversalId: string, providerRef: string): Promise<GqlResponse> =>
    gql(s.http, CONFIRM, { i: { reversalId: gid('Reversal', reversalId), providerRef } }, actor.token);

  const settled = async (retractionId: string): Promise<number> => {
    const d = ok(await gql(s.http, SETTLED, { id: gid('Retraction', retractionId) }, actor.token));
    return (d.retraction.totals.settled as Array<{ amountMinor: number }>).reduce((a, m) => a + m.amountMinor, 0);
  };

  /** The ref is refused as ours: BAD_USER_INPUT on providerRef, nothing written, settled still 0. */
  async function expectRefused(r: OwedReversal & { retractionId: string }, providerRef: string): Promise<void> {
    const before = await tableDigests(s.db.store);
    const res = await confirm(r.id, providerRef);
    expect(codes(res.errors)).toEqual(['BAD_USER_INPUT']);
    expect(res.errors![0]!.extensions?.field).toBe('providerRef');
    expect(res.errors![0]!.message).toMatch(/^providerRef: .*issued/);
    expect(await tableDigests(s.db.store)).toEqual(before);
    expect(await settled(r.retractionId)).toBe(0);
    await expectInvariants(s.db.store);
  }

  it("refuses the reversal's own global id", async () => {
    const r = await owed();
    await expectRefused(r, gid('Reversal', r.id));
  });

  it("refuses the effect's global id", async () => {
    const r = await owed();
    await expectRefused(r, gid('Effect', r.effectId));
  });

  it("refuses the retraction's global id", async () => {
    const r = await owed();
    await expectRefused(r, gid('Retraction', r.retractionId));
  });

  it("refuses the effect's own idempotency key", async () => {
    const r = await owed();
    expect(r.key).toBe(`reversal:pr${n}:refund-0`);
    await expectRefused(r, `pr${n}:refund-0`);
  });

  it('refuses the reversal key with a trailing space', async () => {
    const r = await owed();
    await expectRefused(r, `${r.key} `);
  });

  it('refuses the reversal key in upper case', async () => {
    const r = await owed();
    await expectRefused(r, r.key.toUpperCase());
  });

  it("refuses identifiers of other rows of the fleet: another effect's key, another reversal's key, a raw id, any of our global ids", async () => {
    const r = await owed();
    const other = await owed();
    await expectRefused(r, `  PR${n}:REFUND-0\u00a0`);
    await expectRefused(r, other.key.toUpperCase());
    await expectRefused(r, other.effectId);
    await expectRefused(r, gid('Agent', actor.agentId));
    await expectRefused(r, gid('Belief', '999999999'));
    // Without its base64 padding, and in its readable form, it is still the reversal's global id.
    await expectRefused(r, gid('Reversal', r.id).replace(/=+$/, ''));
    await expectRefused(r, `reversal:${r.id}`.replace('reversal', 'Reversal'));
  });

  it("refuses the reversal's global id on the signed provider callback (400), writing nothing", async () => {
    const r = await owed();
    const before = await tableDigests(s.db.store);
    const body = JSON.stringify({ reversalId: r.id, providerRef: gid('Reversal', r.id) });
    const res = await fetch(`${s.base}/providers/callback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-retract-signature': signBody(SECRET, body) },
      body,
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/^providerRef: .*issued/);
    expect(await tableDigests(s.db.store)).toEqual(before);
    expect(await settled(r.retractionId)).toBe(0);
    await expectInvariants(s.db.store);
  });

  it("a provider's own reference still confirms and sums into settled; a replay is a no-op; another reference is a CONFLICT", async () => {
    const r = await owed();
    const ref = 'prv_3MtwBwLkdIwHu7ix28a3tqPa';
    expect(ok(await confirm(r.id, ref)).confirmReversal).toEqual({
      id: gid('Reversal', r.id),
      status: 'CONFIRMED',
      providerRef: ref,
    });
    expect(await settled(r.retractionId)).toBe(r.amountMinor);
    const before = await tableDigests(s.db.store);
    expect(ok(await confirm(r.id, ref)).confirmReversal.providerRef).toBe(ref);
    expect(await tableDigests(s.db.store)).toEqual(before);
    expect(codes((await confirm(r.id, 'prv_another')).errors)).toEqual(['CONFLICT']);
    expect(await settled(r.retractionId)).toBe(r.amountMinor);
    // A reference that merely contains one of our keys, or is a number no row of the fleet has, is the provider's.
    const q = await owed();
    expect(ok(await confirm(q.id, `refund of ${q.key}`)).confirmReversal.status).toBe('CONFIRMED');
    const t = await owed();
    expect(ok(await confirm(t.id, '8515131751004933')).confirmReversal.status).toBe('CONFIRMED');
    expect(await settled(t.retractionId)).toBe(t.amountMinor);
    await expectInvariants(s.db.store);
  });

  it('normalises in SQL exactly as in TypeScript (retract_ref_fold = foldRef)', async () => {
    const edges = [...EDGE.replace('\u2000-\u200d', '')].concat(
      Array.from({ length: 14 }, (_, i) => String.fromCharCode(0x2000 + i)),
    );
    const corpus = [
      'reversal:K-1',
      'ABC xyz',
      'e\u0301',
      '\u00c9T\u00c9',
      'A\u030a',
      '\u0130stanbul',
      'STRASSE \u00df',
      '\u01c4',
      'a\u0327\u0301',
      '\u00ad x \u00ad',
      '\u034fk\u034f',
      '\u200b\u200bK\ufeff',
      '\uff32\uff25\uff36',
      '\ud83d\ude00 Z',
      'x\u2060',
      '\u3000\u3000Y',
      ...edges.map((c) => `${c}Q${c}`),
      ...edges,
    ];
    const r = await sql<{ i: number; f: string | null }>`
      SELECT i::int, retract_ref_fold(t) AS f FROM unnest(${corpus}::text[]) WITH ORDINALITY AS x(t, i)`.execute(
      s.db.store.db,
    );
    expect(r.rows.sort((a, b) => a.i - b.i).map((x) => x.f)).toEqual(corpus.map(foldRef));
  });
});
