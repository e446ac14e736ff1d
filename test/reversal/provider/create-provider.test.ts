import { describe, expect, it } from 'vitest';
import { createProvider, HttpReversalProvider } from '../../../src/reversal/provider/index';
import { startFakeProvider } from '../../support/fake-provider';

describe('createProvider(env)', () => {
  it('returns null when RETRACT_PROVIDER_URL is unset or blank', () => {
    expect(createProvider({})).toBeNull();
    expect(createProvider({ RETRACT_PROVIDER_URL: '   ' })).toBeNull();
  });

  it('fails clearly on a bad URL or timeout, naming the variable and not echoing the value', () => {
    expect(() => createProvider({ RETRACT_PROVIDER_URL: 'not a url sk_live_123' })).toThrow(
      /^RETRACT_PROVIDER_URL: provider URL is not a valid absolute URL/,
    );
    expect(() => createProvider({ RETRACT_PROVIDER_URL: 'not a url sk_live_123' })).not.toThrow(/sk_live/);
    expect(() => createProvider({ RETRACT_PROVIDER_URL: 'mailto:ops@example.com' })).toThrow(/http or https/);
    for (const t of ['0', '-5', '1.5', 'fast']) {
      expect(() =>
        createProvider({ RETRACT_PROVIDER_URL: 'https://pay.example.com/r', RETRACT_PROVIDER_TIMEOUT_MS: t }),
      ).toThrow(/RETRACT_PROVIDER_TIMEOUT_MS must be a positive integer/);
    }
  });

  it('builds an HTTP provider that works end to end', async () => {
    const fake = await startFakeProvider();
    try {
      const p = createProvider({ RETRACT_PROVIDER_URL: fake.url, RETRACT_PROVIDER_TIMEOUT_MS: '2000' });
      expect(p).toBeInstanceOf(HttpReversalProvider);
      const out = await p!.send({
        idempotencyKey: 'reversal:k-env',
        reversalId: 'rev-env',
        effectId: 'eff-env',
        effectKind: 'payout',
        effectExternalRef: null,
        amount: null,
        payload: {},
      });
      expect(out).toEqual({ outcome: 'confirmed', providerRef: fake.payments.get('reversal:k-env')!.reference });
    } finally {
      await fake.close();
    }
  });
});
