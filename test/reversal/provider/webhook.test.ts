import { describe, expect, it } from 'vitest';
import {
  MAX_CONFIRMATION_BYTES,
  parseConfirmation,
  signBody,
  verifyAndParseConfirmation,
  verifySignature,
} from '../../../src/reversal/provider/webhook';

const secret = 'whsec_test_secret';
const body = JSON.stringify({ reversalId: 'rev-1', providerRef: 'prv_abc123' });

describe('webhook signatures', () => {
  it('signs as sha256=<hex HMAC-SHA256> (known vector)', () => {
    expect(signBody('key', 'The quick brown fox jumps over the lazy dog')).toBe(
      'sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8',
    );
    expect(signBody(secret, body)).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(signBody(secret, Buffer.from(body))).toBe(signBody(secret, body));
  });

  it('verifies a genuine signature over string or Buffer bodies', () => {
    const sig = signBody(secret, body);
    expect(verifySignature(secret, body, sig)).toBe(true);
    expect(verifySignature(secret, Buffer.from(body), sig)).toBe(true);
    expect(verifySignature(secret, body, [sig])).toBe(true);
    expect(verifySignature(secret, body, sig.toUpperCase().replace('SHA256=', 'sha256='))).toBe(true);
  });

  it('refuses a tampered body', () => {
    const sig = signBody(secret, body);
    expect(verifySignature(secret, body.replace('prv_abc123', 'prv_abc124'), sig)).toBe(false);
    expect(verifySignature(secret, `${body} `, sig)).toBe(false);
  });

  it('refuses a wrong secret, and accepts any of several during rotation', () => {
    const sig = signBody(secret, body);
    expect(verifySignature('another-secret', body, sig)).toBe(false);
    expect(verifySignature(['old-secret', secret], body, sig)).toBe(true);
    expect(verifySignature(['old-secret', 'other'], body, sig)).toBe(false);
  });

  it('refuses missing and malformed headers', () => {
    const hex = signBody(secret, body).slice('sha256='.length);
    for (const header of [
      undefined,
      null,
      '',
      'sha256=',
      hex,
      `sha1=${hex}`,
      `sha256=${hex.slice(0, 62)}`,
      `sha256=${hex}00`,
      `sha256=${'z'.repeat(64)}`,
      `sha256=${hex},sha256=${hex}`,
      [],
      [`sha256=${hex}`, `sha256=${hex}`],
    ]) {
      expect(verifySignature(secret, body, header as string | string[] | null | undefined), String(header)).toBe(false);
    }
  });

  it('refuses to sign or verify with an empty secret', () => {
    expect(() => signBody('', body)).toThrow(/secret/);
    expect(() => verifySignature('', body, 'sha256=' + '0'.repeat(64))).toThrow(/secret/);
    expect(() => verifySignature([], body, 'sha256=' + '0'.repeat(64))).toThrow(/secret/);
  });
});

describe('parseConfirmation', () => {
  it('accepts { reversalId, providerRef } and { idempotencyKey, providerRef }, ignoring extra fields', () => {
    expect(parseConfirmation(body)).toEqual({
      ok: true,
      confirmation: { reversalId: 'rev-1', providerRef: 'prv_abc123' },
    });
    expect(
      parseConfirmation(Buffer.from(JSON.stringify({ idempotencyKey: 'reversal:k1', providerRef: 'prv_x', extra: 1 }))),
    ).toEqual({ ok: true, confirmation: { idempotencyKey: 'reversal:k1', providerRef: 'prv_x' } });
  });

  it('rejects with clear messages', () => {
    const cases: Array<[string, RegExp]> = [
      ['not json', /not valid JSON/],
      ['[]', /must be a JSON object/],
      ['null', /must be a JSON object/],
      [JSON.stringify({ providerRef: 'prv_x' }), /reversalId or idempotencyKey/],
      [JSON.stringify({ reversalId: 'rev-1' }), /providerRef: providerRef is required/],
      [JSON.stringify({ reversalId: 'rev-1', providerRef: '  ' }), /providerRef: providerRef must not be empty/],
      [JSON.stringify({ reversalId: 7, providerRef: 'prv_x' }), /reversalId: reversalId must be a string/],
      [JSON.stringify({ reversalId: 'rev-1', providerRef: 'rev-1' }), /not an echo of our id/],
      [JSON.stringify({ reversalId: 'rev-1', providerRef: 'a\nb' }), /control characters/],
      [JSON.stringify({ reversalId: 'rev-1', providerRef: 'p'.repeat(501) }), /at most 500/],
    ];
    for (const [raw, message] of cases) {
      const r = parseConfirmation(raw);
      expect(r.ok, raw).toBe(false);
      expect(!r.ok && r.error, raw).toMatch(message);
    }
    const huge = JSON.stringify({ reversalId: 'rev-1', providerRef: 'prv', pad: 'x'.repeat(MAX_CONFIRMATION_BYTES) });
    expect(parseConfirmation(huge)).toEqual({ ok: false, error: expect.stringMatching(/exceeds/) });
  });

  it('verifyAndParseConfirmation checks the signature before the body', () => {
    expect(verifyAndParseConfirmation(secret, body, signBody(secret, body))).toEqual({
      ok: true,
      signatureValid: true,
      confirmation: { reversalId: 'rev-1', providerRef: 'prv_abc123' },
    });
    expect(verifyAndParseConfirmation(secret, body, signBody('x', body))).toEqual({
      ok: false,
      signatureValid: false,
      error: 'invalid signature',
    });
    const bad = '{"reversalId":"rev-1"}';
    expect(verifyAndParseConfirmation(secret, bad, signBody(secret, bad))).toMatchObject({
      ok: false,
      signatureValid: true,
    });
  });
});
