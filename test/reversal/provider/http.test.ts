import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  HttpReversalProvider,
  parseRetryAfter,
  type HttpReversalProviderOptions,
} from '../../../src/reversal/provider/http';
import type { ProviderLogger, ReversalRequest } from '../../../src/reversal/provider/provider';
import { gid } from '../../../src/kernel/ids';
import { startFakeProvider, type FakeProvider } from '../../support/fake-provider';

let fake: FakeProvider;
let n = 0;

beforeEach(async () => {
  fake = await startFakeProvider();
});
afterEach(async () => {
  await fake.close();
});

function request(overrides: Partial<ReversalRequest> = {}): ReversalRequest {
  n += 1;
  return {
    idempotencyKey: `reversal:effect-key-${n}`,
    reversalId: `rev-${n}`,
    effectId: `eff-${n}`,
    effectKind: 'refund',
    effectExternalRef: `ch_original_${n}`,
    amount: { amountMinor: 1250, currency: 'EUR' },
    payload: { customer: 'customer:4411', note: 'retracted' },
    ...overrides,
  };
}

/** Fast settings: tiny backoff, short per-attempt deadline. */
function provider(opts: Partial<HttpReversalProviderOptions> = {}): HttpReversalProvider {
  return new HttpReversalProvider({
    url: fake.url,
    timeoutMs: 200,
    maxAttempts: 4,
    baseDelayMs: 5,
    maxDelayMs: 20,
    ...opts,
  });
}

function recordingLogger(): ProviderLogger & { warns: Array<{ obj: object; msg?: string }> } {
  const warns: Array<{ obj: object; msg?: string }> = [];
  return {
    warns,
    debug() {},
    warn(obj, msg) {
      warns.push(msg === undefined ? { obj } : { obj, msg });
    },
  };
}

describe('HttpReversalProvider against the fake provider over HTTP', () => {
  it('2xx with a reference: confirmed with the provider reference, wire format as documented', async () => {
    const req = request();
    const out = await provider({ headers: { Authorization: 'Bearer t0k', 'Idempotency-Key': 'hijack' } }).send(req);

    const payment = fake.payments.get(req.idempotencyKey);
    expect(payment).toBeDefined();
    expect(out).toEqual({ outcome: 'confirmed', providerRef: payment!.reference });
    expect(payment!.reference).toMatch(/^prv_[0-9a-f]{24}$/);
    expect(fake.deliveries(req.idempotencyKey)).toBe(1);
    expect(fake.settledMinor('EUR')).toBe(1250);

    const [sent] = fake.requests;
    expect(sent!.headers['idempotency-key']).toBe(req.idempotencyKey);
    expect(sent!.headers['content-type']).toBe('application/json');
    expect(sent!.headers['authorization']).toBe('Bearer t0k');
    expect(sent!.body).toEqual({
      reversalId: req.reversalId,
      effectId: req.effectId,
      effectKind: 'refund',
      originalReference: req.effectExternalRef,
      amount: req.amount,
      payload: req.payload,
    });
  });

  it('falls back to the `id` field when `reference` is absent', async () => {
    const req = request();
    fake.script(req.idempotencyKey, { kind: 'ok', referenceField: 'id' });
    const out = await provider().send(req);
    expect(out).toEqual({ outcome: 'confirmed', providerRef: fake.payments.get(req.idempotencyKey)!.reference });
  });

  it('4xx: failed with the provider reason, sent exactly once', async () => {
    const req = request();
    fake.script(req.idempotencyKey, { kind: 'fail', status: 402, reason: 'insufficient balance on merchant account' });
    const out = await provider().send(req);
    expect(out.outcome).toBe('failed');
    expect(out.outcome === 'failed' && out.reason).toContain('insufficient balance on merchant account');
    expect(out.outcome === 'failed' && out.reason).toContain('402');
    expect(fake.deliveries(req.idempotencyKey)).toBe(1);
    expect(fake.payments.size).toBe(0);
  });

  it('4xx reason is truncated to 500 characters', async () => {
    const req = request();
    fake.script(req.idempotencyKey, { kind: 'fail', reason: 'x'.repeat(5000) });
    const out = await provider().send(req);
    expect(out.outcome).toBe('failed');
    const reason = out.outcome === 'failed' ? out.reason : '';
    expect(reason.length).toBeLessThan(560);
    expect(reason).toMatch(/x{400}/);
  });

  it('422 for a key reused with a different body is a permanent failure', async () => {
    const first = request();
    await provider().send(first);
    const out = await provider().send({ ...first, amount: { amountMinor: 999_999, currency: 'EUR' } });
    expect(out.outcome).toBe('failed');
    expect(out.outcome === 'failed' && out.reason).toMatch(/422.*different request body/);
    expect(fake.payments.size).toBe(1);
    expect(fake.settledMinor()).toBe(1250);
  });

  it('500 then 2xx: confirmed after 2 deliveries under the same key and byte-identical body', async () => {
    const req = request();
    fake.script(req.idempotencyKey, '500');
    const out = await provider().send(req);
    expect(out).toEqual({ outcome: 'confirmed', providerRef: fake.payments.get(req.idempotencyKey)!.reference });
    expect(fake.deliveries(req.idempotencyKey)).toBe(2);
    expect(fake.requests.map((r) => r.key)).toEqual([req.idempotencyKey, req.idempotencyKey]);
    expect(fake.requests[0]!.raw).toBe(fake.requests[1]!.raw);
  });

  it('timeout (provider stalls after recording) then 2xx: confirmed, paid once', async () => {
    const req = request();
    fake.script(req.idempotencyKey, { kind: 'stall', ms: 1_000 });
    const started = Date.now();
    const out = await provider({ timeoutMs: 100 }).send(req);
    expect(Date.now() - started).toBeLessThan(900);
    expect(fake.payments.size).toBe(1);
    expect(out).toEqual({ outcome: 'confirmed', providerRef: fake.payments.get(req.idempotencyKey)!.reference });
    expect(fake.deliveries(req.idempotencyKey)).toBe(2);
    expect(fake.settledMinor('EUR')).toBe(1250);
  });

  it('accept-then-drop (reply lost after the money moved) then retry: the same reference, paid once', async () => {
    const req = request();
    fake.script(req.idempotencyKey, 'accept-then-drop');
    const log = recordingLogger();
    const out = await provider({ logger: log }).send(req);
    const payment = fake.payments.get(req.idempotencyKey)!;
    expect(out).toEqual({ outcome: 'confirmed', providerRef: payment.reference });
    expect(fake.deliveries(req.idempotencyKey)).toBe(2);
    expect(fake.payments.size).toBe(1);
    expect(fake.settledMinor()).toBe(1250);
    expect(log.warns[0]!.obj).toMatchObject({ attempt: 1, idempotencyKey: req.idempotencyKey });
  });

  it('duplicate delivery of the same key (re-send, and concurrent sends): same reference, one payment', async () => {
    const req = request();
    const p = provider();
    const a = await p.send(req);
    const [b, c] = await Promise.all([p.send(req), p.send(req)]);
    expect(a.outcome).toBe('confirmed');
    expect(b).toEqual(a);
    expect(c).toEqual(a);
    expect(fake.deliveries(req.idempotencyKey)).toBe(3);
    expect(fake.payments.size).toBe(1);
    expect(fake.settledMinor('EUR')).toBe(1250);
  });

  it('connection refused: retry_later after maxAttempts', async () => {
    const port = await closedPort();
    const log = recordingLogger();
    const out = await provider({ url: `http://127.0.0.1:${port}/reversals`, maxAttempts: 3, logger: log }).send(
      request(),
    );
    expect(out.outcome).toBe('retry_later');
    expect(out.outcome === 'retry_later' && out.reason).toMatch(/gave up after 3 attempt\(s\).*ECONNREFUSED/);
    expect(log.warns.filter((w) => w.msg?.includes('retrying'))).toHaveLength(2);
  });

  it('persistent 429/503: exactly maxAttempts deliveries, then retry_later, nothing paid', async () => {
    const req = request();
    fake.script(req.idempotencyKey, { kind: 'status', status: 429 }, '500', { kind: 'status', status: 503 });
    const out = await provider({ maxAttempts: 3 }).send(req);
    expect(out.outcome).toBe('retry_later');
    expect(out.outcome === 'retry_later' && out.reason).toContain('HTTP 503');
    expect(fake.deliveries(req.idempotencyKey)).toBe(3);
    expect(fake.payments.size).toBe(0);
  });

  it('honours Retry-After: waits what the provider asked, up to maxRetryAfterMs', async () => {
    const req = request();
    fake.script(req.idempotencyKey, { kind: 'status', status: 503, retryAfter: 1 });
    const out = await provider({ baseDelayMs: 1, maxDelayMs: 1, maxRetryAfterMs: 250 }).send(req);
    expect(out.outcome).toBe('confirmed');
    const [first, second] = fake.requests;
    const gap = second!.at - first!.at;
    expect(gap).toBeGreaterThanOrEqual(230); // the Retry-After (capped), not the 1ms backoff
    expect(gap).toBeLessThan(900); // bounded: not the full second asked for

    const req2 = request();
    fake.script(req2.idempotencyKey, { kind: 'status', status: 429, retryAfter: 3600 });
    const started = Date.now();
    expect((await provider({ maxRetryAfterMs: 30 }).send(req2)).outcome).toBe('confirmed');
    expect(Date.now() - started).toBeLessThan(500);
  });

  it('parses Retry-After seconds and HTTP-dates', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter('2', now)).toBe(2000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:03 GMT', now)).toBe(3000);
    expect(parseRetryAfter('Tue, 31 Dec 2024 00:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });

  it('2xx without a reference is a protocol violation: retry_later, no invented reference; a re-send confirms', async () => {
    const req = request();
    fake.script(req.idempotencyKey, 'no-reference');
    const p = provider();
    const first = await p.send(req);
    expect(first.outcome).toBe('retry_later');
    expect(first.outcome === 'retry_later' && first.reason).toMatch(/protocol violation/);
    expect(fake.deliveries(req.idempotencyKey)).toBe(1);

    const second = await p.send(req); // the lease-expiry re-send, same key
    expect(second).toEqual({ outcome: 'confirmed', providerRef: fake.payments.get(req.idempotencyKey)!.reference });
    expect(fake.payments.size).toBe(1);
  });

  it('a "reference" that echoes our own key or id is not a provider reference', async () => {
    const req = request();
    fake.script(
      req.idempotencyKey,
      { kind: 'status', status: 200, body: { reference: req.idempotencyKey } },
      { kind: 'status', status: 200, body: { id: req.reversalId } },
      { kind: 'status', status: 200, body: { reference: '', id: 42 } },
      // The same normalisation as the store's check: case, edge spaces, and any of our global ids.
      { kind: 'status', status: 200, body: { reference: ` ${req.idempotencyKey.toUpperCase()}\u00a0` } },
      { kind: 'status', status: 200, body: { reference: gid('Reversal', 7) } },
    );
    const p = provider();
    for (let i = 0; i < 5; i++) expect((await p.send(req)).outcome).toBe('retry_later');
  });

  it('3xx is not followed and not treated as confirmation', async () => {
    const req = request();
    fake.script(req.idempotencyKey, { kind: 'status', status: 307, body: { reference: 'prv_elsewhere' } });
    const out = await provider().send(req);
    expect(out.outcome).toBe('retry_later');
    expect(fake.deliveries(req.idempotencyKey)).toBe(1);
  });

  describe('outside abort signal', () => {
    it('stops an in-flight delivery promptly', async () => {
      const req = request();
      fake.script(req.idempotencyKey, 'stall');
      const ac = new AbortController();
      setTimeout(() => ac.abort(new Error('worker shutting down')), 50);
      const started = Date.now();
      const out = await provider({ timeoutMs: 10_000 }).send(req, { signal: ac.signal });
      expect(Date.now() - started).toBeLessThan(1_000);
      expect(out.outcome).toBe('retry_later');
      expect(out.outcome === 'retry_later' && out.reason).toMatch(/aborted \(worker shutting down\)/);
      expect(fake.deliveries(req.idempotencyKey)).toBe(1);
    });

    it('stops during backoff without another delivery', async () => {
      const req = request();
      fake.script(req.idempotencyKey, '500');
      const ac = new AbortController();
      const p = provider({ baseDelayMs: 10_000, maxDelayMs: 10_000, random: () => 0.99 });
      const started = Date.now();
      const pending = p.send(req, { signal: ac.signal });
      setTimeout(() => ac.abort(), 100);
      const out = await pending;
      expect(Date.now() - started).toBeLessThan(1_000);
      expect(out.outcome).toBe('retry_later');
      expect(fake.deliveries(req.idempotencyKey)).toBe(1);
    });

    it('an already-aborted signal sends nothing', async () => {
      const req = request();
      const out = await provider().send(req, { signal: AbortSignal.abort() });
      expect(out.outcome).toBe('retry_later');
      expect(fake.requests).toHaveLength(0);
    });
  });

  it('validates its options', () => {
    expect(() => new HttpReversalProvider({ url: 'not a url' })).toThrow(/valid absolute URL/);
    expect(() => new HttpReversalProvider({ url: 'ftp://x/y' })).toThrow(/http or https/);
    expect(() => new HttpReversalProvider({ url: 'https://u:p@x/y' })).toThrow(/credentials/);
    expect(() => new HttpReversalProvider({ url: fake.url, maxAttempts: 0 })).toThrow(/maxAttempts/);
    expect(() => new HttpReversalProvider({ url: fake.url, timeoutMs: -1 })).toThrow(/timeoutMs/);
    expect(new HttpReversalProvider({ url: fake.url }).id).toMatch(/^http:127\.0\.0\.1:\d+$/);
  });

  it('an unserialisable request or an undeliverable key fails permanently without sending', async () => {
    expect((await provider().send(request({ payload: { n: 1n } }))).outcome).toBe('failed');
    expect((await provider().send(request({ idempotencyKey: 'reversal:a\nb' }))).outcome).toBe('failed');
    expect(fake.requests).toHaveLength(0);
  });
});

/** A port that was just listening and is now closed (connection refused). */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}
