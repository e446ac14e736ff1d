import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core';
import { NODE_TYPES, gid } from '../../src/kernel/ids';
import { asGlobalId, echoOf } from '../../src/kernel/provider-ref';
import { signBody } from '../../src/reversal/provider';
import { codes, gql, ok, type GqlResponse } from '../support/api-client';
import { type ApiServer, startApiServer, tableDigests } from '../support/api-server';
import { owedReversals, type OwedReversal } from '../support/dispatch-fixtures';
import { actorIn, engines, expectInvariants } from '../support/engines';

/**
 * Issue 29, Broken 4: our own reversal key with an invisible character added (U+200E, U+200F, U+061C, U+00AD,
 * U+034F, U+2062, U+FE0F, U+3164, tag characters, bidi embeddings and isolates), or our global id in lower
 * case, was CONFIRMED and summed into `settled`, through confirmReversal and the signed provider callback.
 * Every Default_Ignorable_Code_Point, Cf and Bidi_Control code point is now refused in a providerRef, and
 * global ids are recognised in any letter case.
 */
const SECRET = 'whsec_provider_ref_invisible_0123456789';
const CONFIRM = 'mutation($i: ConfirmReversalInput!) { confirmReversal(input: $i) { id status providerRef } }';
const SETTLED = 'query($id: ID!) { retraction(id: $id) { totals { settled { amountMinor } } reversals { status } } }';
const RUNS = Number(process.env.RETRACT_PROPS_RUNS ?? 40);

/** Every invisible code point, from the engine's Unicode data (the rule's own definition, not a hand list). */
const INVISIBLE = /^[\p{Default_Ignorable_Code_Point}\p{Cf}\p{Bidi_Control}]$/u;
const ALL_INVISIBLE: string[] = [];
for (let cp = 0; cp <= 0x10ffff; cp++) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  const c = String.fromCodePoint(cp);
  if (INVISIBLE.test(c)) ALL_INVISIBLE.push(c);
}
/** The ones the hostile pass used, always among the picks. */
const NAMED = [
  '\u200e',
  '\u200f',
  '\u061c',
  '\u00ad',
  '\u034f',
  '\u2062',
  '\ufe0f',
  '\u3164',
  '\u{e0041}',
  '\u{e007f}',
  '\u202a',
  '\u202b',
  '\u202c',
  '\u202d',
  '\u202e',
  '\u2066',
  '\u2067',
  '\u2068',
  '\u2069',
];
const invisible = fc.oneof(fc.constantFrom(...NAMED), fc.constantFrom(...ALL_INVISIBLE));

/** `s` with 1–3 invisible characters inserted: before it, after it, or inside it. */
const withInvisibles = (s: string) =>
  fc.array(fc.tuple(fc.nat({ max: s.length }), invisible), { minLength: 1, maxLength: 3 }).map((ins) => {
    let out = [...s];
    for (const [at, c] of ins) out = [...out.slice(0, at), c, ...out.slice(at)];
    return out.join('');
  });
/** `s` with the case of each letter chosen at random (the forms all differ from `s` as bytes, most of the time). */
const anyCase = (s: string) =>
  fc
    .array(fc.boolean(), { minLength: s.length, maxLength: s.length })
    .map((up) => [...s].map((c, i) => (up[i] ? c.toUpperCase() : c.toLowerCase())).join(''));

describe('global ids are recognised in any letter case', () => {
  it("every casing of every type's encoded global id, padded or not, is that type", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...NODE_TYPES),
        fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }),
        fc.boolean(),
        fc.array(fc.boolean(), { minLength: 64, maxLength: 64 }),
        (type, id, padded, up) => {
          const g = padded ? gid(type, String(id)) : gid(type, String(id)).replace(/=+$/, '');
          const cased = [...g].map((c, i) => (up[i] ? c.toUpperCase() : c.toLowerCase())).join('');
          expect(asGlobalId(cased)).toBe(type);
          expect(asGlobalId(g.toLowerCase())).toBe(type);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('provider references of the same shape are not mistaken for one', () => {
    for (const ref of [
      'prv_3MtwBwLkdIwHu7ix28a3tqPa',
      'ch_1Nq2x8LkdIwHu7ix',
      '8515131751004933',
      'UmV2ZXJzYWw6',
      'abcdefghijklmnop',
      're_3OeQ4x2eZvKYlo2C1u0WmXcP',
    ]) {
      expect(asGlobalId(ref), ref).toBeNull();
    }
  });
});

describe("the HTTP adapter's echo check (no store at hand)", () => {
  it("treats a reference with an invisible character, or a re-cased global id, as not the provider's", () => {
    fc.assert(
      fc.property(fc.constantFrom('reversal:k-1', 'k-1', '12').chain(withInvisibles), (ref) => {
        expect(echoOf(ref, ['reversal:k-1', '12'])).toMatch(/invisible or format character/);
      }),
      { numRuns: 500 },
    );
    expect(echoOf(gid('Reversal', '12').toLowerCase(), [])).toBe('a global id (Reversal)');
    expect(echoOf('prv_3MtwBwLkdIwHu7ix28a3tqPa', ['reversal:k-1', '12'])).toBeNull();
  });
});

describe.each(engines())('providerRef: invisible characters and re-cased ids on %s', (engine) => {
  let s: ApiServer;
  let actor: Actor & { token: string };
  let n = 0;

  beforeAll(async () => {
    s = await startApiServer(engine, { config: { providerSecret: SECRET } });
    actor = await actorIn(s.db.store, 'invis');
  });
  afterAll(async () => {
    if (s) await expectInvariants(s.db.store);
    await s?.close();
  });

  async function owed(): Promise<OwedReversal & { retractionId: string }> {
    const { retractionId, reversals } = await owedReversals(s.core, actor, 1, { prefix: `iv${++n}` });
    return { ...reversals[0]!, retractionId };
  }
  const confirm = (reversalId: string, providerRef: string): Promise<GqlResponse> =>
    gql(s.http, CONFIRM, { i: { reversalId: gid('Reversal', reversalId), providerRef } }, actor.token);
  const callback = (body: string) =>
    fetch(`${s.base}/providers/callback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-retract-signature': signBody(SECRET, body) },
      body,
    });
  /** Nothing was confirmed: the reversal is still OWED and nothing is settled. */
  const stillOwed = async (r: { retractionId: string }) => {
    const d = ok(await gql(s.http, SETTLED, { id: gid('Retraction', r.retractionId) }, actor.token)).retraction;
    expect(d.totals.settled.reduce((a: number, m: { amountMinor: number }) => a + m.amountMinor, 0)).toBe(0);
    expect(d.reversals.map((x: { status: string }) => x.status)).toEqual(['OWED']);
  };

  it('every reported bypass is refused BAD_USER_INPUT on providerRef, naming the rule, and writes nothing', async () => {
    const r = await owed();
    const before = await tableDigests(s.db.store);
    const refs = [
      ...NAMED.map((c) => `${r.key}${c}`),
      `\u2066${r.key}\u2069`,
      `\u202a${r.key}\u202c`,
      gid('Reversal', r.id).toLowerCase(),
      gid('Reversal', r.id).toUpperCase(),
      gid('Effect', r.effectId).toLowerCase(),
      gid('Retraction', r.retractionId).toLowerCase().replace(/=+$/, ''),
    ];
    for (const ref of refs) {
      const res = await confirm(r.id, ref);
      expect(codes(res.errors), JSON.stringify(ref)).toEqual(['BAD_USER_INPUT']);
      expect(res.errors![0]!.extensions?.field).toBe('providerRef');
      expect(res.errors![0]!.message).toMatch(
        /^providerRef: (.*Default_Ignorable_Code_Point, Cf, Bidi_Control.*found U\+[0-9A-F]{4,}|.*issued)/,
      );
    }
    expect(await tableDigests(s.db.store)).toEqual(before);
    await stillOwed(r);
    await expectInvariants(s.db.store);
  });

  it('property: our keys, ids and global ids with invisible characters inserted, or re-cased, are never confirmed', async () => {
    const r = await owed();
    const targets = [
      r.key,
      r.key.replace(/^reversal:/, ''),
      r.id,
      r.effectId,
      gid('Reversal', r.id),
      gid('Effect', r.effectId),
      `Reversal:${r.id}`,
    ];
    const ref = fc.oneof(
      fc.constantFrom(...targets).chain(withInvisibles),
      fc
        .constantFrom(
          gid('Reversal', r.id),
          gid('Retraction', r.retractionId),
          gid('Effect', r.effectId),
          gid('Agent', actor.agentId),
        )
        .chain(anyCase),
      fc.constantFrom(gid('Reversal', r.id), gid('Effect', r.effectId)).chain(anyCase).chain(withInvisibles),
    );
    const before = await tableDigests(s.db.store);
    await fc.assert(
      fc.asyncProperty(ref, async (providerRef) => {
        const res = await confirm(r.id, providerRef);
        expect(codes(res.errors), JSON.stringify(providerRef)).toEqual(['BAD_USER_INPUT']);
        expect(res.errors![0]!.extensions?.field).toBe('providerRef');
      }),
      { numRuns: RUNS },
    );
    expect(await tableDigests(s.db.store)).toEqual(before);
    await stillOwed(r);
    await expectInvariants(s.db.store);
  });

  it('the signed provider callback refuses the same references (400), writing nothing', async () => {
    const r = await owed();
    const before = await tableDigests(s.db.store);
    for (const providerRef of [
      `${r.key}\u200e`,
      `${r.key}\u3164`,
      `${r.key}\u{e0041}`,
      `\u2067${r.key}`,
      gid('Reversal', r.id).toLowerCase(),
    ]) {
      for (const body of [
        JSON.stringify({ reversalId: r.id, providerRef }),
        JSON.stringify({ idempotencyKey: r.key, providerRef }),
      ]) {
        const res = await callback(body);
        expect(res.status, body).toBe(400);
        expect(((await res.json()) as { error: string }).error).toMatch(/^providerRef: /);
      }
    }
    expect(await tableDigests(s.db.store)).toEqual(before);
    await stillOwed(r);
    await expectInvariants(s.db.store);
  });

  it("a provider's own reference, in any case and with spaces at its ends, still confirms", async () => {
    const r = await owed();
    const res = await callback(JSON.stringify({ reversalId: r.id, providerRef: ' PRV_3mTWbWlKDiWhU7IX28A3TQpA ' }));
    expect(res.status).toBe(200);
    const q = await owed();
    expect(ok(await confirm(q.id, 're_3OeQ4x2eZvKYlo2C1u0WmXcP')).confirmReversal.status).toBe('CONFIRMED');
    await expectInvariants(s.db.store);
  });
});
