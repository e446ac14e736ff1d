import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from './fake-provider';

/** The double must itself behave like an idempotent provider, or the adapter tests prove nothing. */
let fake: FakeProvider;
beforeEach(async () => {
  fake = await startFakeProvider();
});
afterEach(async () => {
  await fake.close();
});

function post(body: unknown, key?: string) {
  return fetch(fake.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
    body: JSON.stringify(body),
  });
}

describe('fake provider', () => {
  it('rejects a request without Idempotency-Key and records no payment', async () => {
    const res = await post({ amount: { amountMinor: 1, currency: 'EUR' } });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'missing Idempotency-Key header' });
    expect(fake.payments.size).toBe(0);
    expect(fake.requests).toHaveLength(1);
  });

  it('replays the same reference for a repeated key (even with reordered fields), 422 on a different body', async () => {
    const body = { amount: { amountMinor: 500, currency: 'USD' }, reversalId: 'r1' };
    const a = await (await post(body, 'k1')).json();
    const b = await (await post({ reversalId: 'r1', amount: { currency: 'USD', amountMinor: 500 } }, 'k1')).json();
    expect(a.reference).toMatch(/^prv_/);
    expect(b).toMatchObject({ reference: a.reference, replayed: true });
    const c = await post({ ...body, amount: { amountMinor: 501, currency: 'USD' } }, 'k1');
    expect(c.status).toBe(422);
    expect(fake.deliveries('k1')).toBe(3);
    expect(fake.settledMinor('USD')).toBe(500);
    expect(fake.settledMinor('EUR')).toBe(0);
    const d = await (await post({ amount: { amountMinor: 7, currency: 'EUR' } }, 'k2')).json();
    expect(d.reference).not.toBe(a.reference);
    expect(fake.settledMinor()).toBe(507);
  });

  it('consumes scripted behaviours in order, then answers ok', async () => {
    fake.script('k', 'fail', '500');
    fake.script('k', { kind: 'fail', status: 409, reason: 'busy' });
    expect((await post({}, 'k')).status).toBe(400);
    expect((await post({}, 'k')).status).toBe(500);
    const busy = await post({}, 'k');
    expect([busy.status, await busy.json()]).toEqual([409, { error: 'busy' }]);
    expect((await post({}, 'k')).status).toBe(201);
  });

  it('close() does not hang with stalled requests open', async () => {
    fake.script('s1', 'stall');
    fake.script('s2', { kind: 'stall', ms: 60_000, record: false });
    const pending = [post({}, 's1').catch((e: unknown) => e), post({}, 's2').catch((e: unknown) => e)];
    while (fake.requests.length < 2) await new Promise((r) => setTimeout(r, 5));
    const started = Date.now();
    await fake.close();
    expect(Date.now() - started).toBeLessThan(1_000);
    const results = await Promise.all(pending);
    expect(results.every((r) => r instanceof Error)).toBe(true);
    expect([...fake.payments.keys()]).toEqual(['s1']); // s1 recorded before stalling; s2 never processed
  });
});
