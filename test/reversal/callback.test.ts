import { describe, expect, it } from 'vitest';
import type { Core } from '../../src/core';
import { handleProviderCallback, type CallbackLogger } from '../../src/reversal/callback';
import { signBody } from '../../src/reversal/provider';
import { takeOwedReversals } from '../../src/reversal/dispatch.service';
import { retractBelief } from '../../src/retraction/retraction.service';
import { actorIn, engines, expectInvariants, type TestDb } from '../support/engines';
import { passportStory } from '../support/story';
import { allReversals, eventsFor, owedReversals, reversalState } from '../support/dispatch-fixtures';
import { storeSuite } from '../support/helpers';

const SECRET = 'whsec_test_only_0123456789';

function logger() {
  const lines: Array<{ level: string; obj: object; msg?: string }> = [];
  const at = (level: string) => (obj: object, msg?: string) => {
    lines.push({ level, obj, ...(msg !== undefined ? { msg } : {}) });
  };
  const l: CallbackLogger = { info: at('info'), warn: at('warn'), error: at('error') };
  return { l, lines };
}

describe.each(engines())('provider callback handler on %s', (engine) => {
  let t: TestDb;
  let core: Core;
  storeSuite(engine, {}, (s) => ({ t, core } = s));

  const call = (body: unknown, opts: { sign?: string | null; raw?: string; secret?: string } = {}) => {
    const rawBody = opts.raw ?? JSON.stringify(body);
    const signatureHeader = opts.sign === undefined ? signBody(SECRET, rawBody) : opts.sign;
    const { l, lines } = logger();
    return handleProviderCallback({ core, secret: opts.secret ?? SECRET, rawBody, signatureHeader, logger: l }).then(
      (res) => ({ ...res, lines }),
    );
  };

  it("a signed confirmation CONFIRMs the reversal with the provider's reference; a replay is a harmless 200; another reference is 409", async () => {
    const actor = await actorIn(t.store, 'acme');
    const {
      reversals: [r, r2],
    } = await owedReversals(core, actor, 2, { prefix: 'cb1' });
    // Dispatched, lease live: the callback still confirms (it is the provider's own word).
    await takeOwedReversals(core, 'acme', { limit: 1, leaseMs: 60_000, holder: 'd' });

    const ok = await call({ reversalId: r!.id, providerRef: 'prv_cb_1' });
    expect(ok).toMatchObject({
      status: 200,
      body: { reversalId: r!.id, status: 'CONFIRMED', providerRef: 'prv_cb_1', duplicate: false },
    });
    expect(await reversalState(t.store, r!.id)).toMatchObject({ status: 'CONFIRMED', provider_ref: 'prv_cb_1' });
    expect((await eventsFor(t.store, r!.id, 'ReversalConfirmed'))[0]!.data).toMatchObject({
      via: 'callback',
      previousStatus: 'DISPATCHED',
    });

    const replay = await call({ reversalId: r!.id, providerRef: 'prv_cb_1' });
    expect(replay).toMatchObject({ status: 200, body: { duplicate: true, providerRef: 'prv_cb_1' } });
    expect(await eventsFor(t.store, r!.id, 'ReversalConfirmed')).toHaveLength(1);

    const other = await call({ reversalId: r!.id, providerRef: 'prv_cb_other' });
    expect(other.status).toBe(409);
    expect(other.lines.some((x) => x.level === 'warn')).toBe(true);
    expect((await reversalState(t.store, r!.id)).provider_ref).toBe('prv_cb_1');

    // By idempotency key alone; OWED straight to CONFIRMED.
    const byKey = await call({ idempotencyKey: r2!.key, providerRef: 'prv_cb_2' });
    expect(byKey).toMatchObject({ status: 200, body: { reversalId: r2!.id, status: 'CONFIRMED' } });
    await expectInvariants(t.store);
  });

  it('a bad or missing signature is 401, logged, and changes nothing', async () => {
    const actor = await actorIn(t.store, 'acme');
    const {
      reversals: [r],
    } = await owedReversals(core, actor, 1, { prefix: 'cb2' });
    const body = JSON.stringify({ reversalId: r!.id, providerRef: 'prv_forged' });
    for (const sign of [signBody('not-the-secret', body), null, 'sha256=zz', signBody(SECRET, body + ' ')]) {
      const res = await call(null, { raw: body, sign });
      expect(res).toMatchObject({ status: 401, body: { error: 'invalid signature' } });
      expect(res.lines.filter((x) => x.level === 'warn' && /invalid signature/.test(x.msg ?? ''))).toHaveLength(1);
    }
    expect(await reversalState(t.store, r!.id)).toMatchObject({ status: 'OWED', provider_ref: null });
    // An empty secret is a misconfiguration, not the caller's fault.
    expect(
      (await call({ reversalId: r!.id, providerRef: 'prv_x' }, { secret: '', sign: 'sha256=' + '0'.repeat(64) }))
        .status,
    ).toBe(500);
  });

  it('bad bodies are 400, unknown reversals 404, conflicting names 400, keys shared across fleets 409, UNREACHABLE 409', async () => {
    const acme = await actorIn(t.store, 'acme');
    const globex = await actorIn(t.store, 'globex');
    const a = await owedReversals(core, acme, 1, { prefix: 'shared' });
    const g = await owedReversals(core, globex, 1, { prefix: 'shared' });
    const ra = a.reversals[0]!;
    const rg = g.reversals[0]!;
    expect(ra.key).toBe(rg.key);

    expect((await call(null, { raw: '{not json' })).status).toBe(400);
    expect((await call({ providerRef: 'prv_1' })).status).toBe(400);
    expect((await call({ reversalId: ra.id })).status).toBe(400);
    expect((await call({ reversalId: 'abc', providerRef: 'prv_1' })).status).toBe(400);
    expect((await call({ reversalId: '9999999999999999999', providerRef: 'prv_1' })).status).toBe(400);
    expect((await call({ reversalId: ra.id, providerRef: ra.key })).status).toBe(400);
    expect((await call({ reversalId: '999999', providerRef: 'prv_1' })).status).toBe(404);
    expect((await call({ idempotencyKey: 'reversal:nobody', providerRef: 'prv_1' })).status).toBe(404);
    expect((await call({ reversalId: ra.id, idempotencyKey: 'reversal:other', providerRef: 'prv_1' })).status).toBe(
      400,
    );
    const ambiguous = await call({ idempotencyKey: ra.key, providerRef: 'prv_1' });
    expect(ambiguous.status).toBe(409);
    expect(String(ambiguous.body.error)).toMatch(/reversalId/);
    // Named by id, each fleet's reversal is found and confirmed in its own fleet.
    expect((await call({ reversalId: rg.id, idempotencyKey: rg.key, providerRef: 'prv_g' })).status).toBe(200);
    expect(await reversalState(t.store, rg.id)).toMatchObject({
      fleet_id: 'globex',
      status: 'CONFIRMED',
      provider_ref: 'prv_g',
    });
    expect(await reversalState(t.store, ra.id)).toMatchObject({ status: 'OWED' });

    const s = await passportStory(core, acme, 'customer:9');
    await retractBelief(core, acme, { beliefId: s.passport.id, reason: 'forged' });
    const unreachable = (await allReversals(t.store)).find((x) => x.status === 'UNREACHABLE')!;
    expect((await call({ reversalId: unreachable.id, providerRef: 'prv_u' })).status).toBe(409);
    await expectInvariants(t.store);
  });
});
