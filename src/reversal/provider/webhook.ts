import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

/**
 * Provider → RETRACT confirmations arriving asynchronously (webhooks).
 *
 * The provider signs the exact raw request body with a shared secret: header
 * `X-Retract-Signature: sha256=<lowercase hex HMAC-SHA256(secret, rawBody)>`. The route must verify the signature
 * over the raw bytes (before any JSON re-serialisation), then parse the body, then call confirmReversal with the
 * provider's reference. Confirmations are idempotent on the RETRACT side, so a replayed webhook changes nothing.
 */

/** Header carrying the signature (Node lower-cases incoming header names). */
export const SIGNATURE_HEADER = 'x-retract-signature';
/** Largest confirmation body accepted by {@link parseConfirmation}. */
export const MAX_CONFIRMATION_BYTES = 64 * 1024;

const PREFIX = 'sha256=';
const HEADER_RE = /^sha256=([0-9a-f]{64})$/i;

function requireSecret(secret: string | Buffer): void {
  if (secret.length === 0) throw new Error('webhook secret must not be empty');
}

/** `sha256=<hex>` HMAC-SHA256 of the raw body. Throws on an empty secret (an unsigned webhook is never acceptable). */
export function signBody(secret: string | Buffer, rawBody: string | Buffer): string {
  requireSecret(secret);
  return PREFIX + createHmac('sha256', secret).update(rawBody).digest('hex');
}

/**
 * True only when `header` is exactly one well-formed `sha256=<64 hex>` value matching the HMAC of `rawBody` under
 * `secret` (or under any of several secrets, for rotation). Missing, repeated or malformed headers are refused.
 * The comparison is constant-time. Throws on an empty secret (misconfiguration, not a bad request).
 */
export function verifySignature(
  secret: string | Buffer | ReadonlyArray<string | Buffer>,
  rawBody: string | Buffer,
  header: string | ReadonlyArray<string> | null | undefined,
): boolean {
  const secrets = Array.isArray(secret) ? (secret as ReadonlyArray<string | Buffer>) : [secret as string | Buffer];
  if (secrets.length === 0) throw new Error('webhook secret must not be empty');
  secrets.forEach(requireSecret);
  let value: string | undefined;
  if (typeof header === 'string') value = header;
  else if (Array.isArray(header) && header.length === 1) value = header[0];
  if (value === undefined) return false;
  const m = HEADER_RE.exec(value.trim());
  if (!m || !m[1]) return false;
  const given = Buffer.from(m[1], 'hex');
  let ok = false;
  for (const s of secrets) {
    const expected = createHmac('sha256', s).update(rawBody).digest();
    // Evaluate every secret so timing does not reveal which one matched.
    if (timingSafeEqual(given, expected)) ok = true;
  }
  return ok;
}

const idField = (name: string, max: number) =>
  z
    .string({ error: `${name} must be a string` })
    .trim()
    .min(1, `${name} must not be empty`)
    .max(max, `${name} must be at most ${max} characters`)
    .optional();

const confirmationSchema = z
  .object(
    {
      reversalId: idField('reversalId', 200),
      idempotencyKey: idField('idempotencyKey', 1000),
      providerRef: z
        .string({ error: 'providerRef is required and must be a string' })
        .trim()
        .min(1, 'providerRef must not be empty')
        .max(500, 'providerRef must be at most 500 characters')
        .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'providerRef must not contain control characters'),
    },
    { error: 'confirmation must be a JSON object' },
  )
  .refine((c) => c.reversalId !== undefined || c.idempotencyKey !== undefined, {
    message: 'confirmation must name the reversal by reversalId or idempotencyKey',
  })
  .refine((c) => c.providerRef !== c.reversalId && c.providerRef !== c.idempotencyKey, {
    message: "providerRef must be the provider's own reference, not an echo of our id or key",
    path: ['providerRef'],
  });

/** A validated confirmation: which reversal (by id or key, at least one) and the provider's own reference. */
type Confirmation =
  | { reversalId: string; idempotencyKey?: string; providerRef: string }
  | { reversalId?: string; idempotencyKey: string; providerRef: string };

/** Outcome of parsing; `error` is a client-safe message suitable for a 400 response. */
export type ConfirmationParse = { ok: true; confirmation: Confirmation } | { ok: false; error: string };

/**
 * Parses and validates a confirmation body `{ reversalId, providerRef }` or `{ idempotencyKey, providerRef }`
 * (both ids may be given; the caller must check they agree). Never throws; unknown fields are ignored.
 */
export function parseConfirmation(rawBody: string | Buffer): ConfirmationParse {
  const size = typeof rawBody === 'string' ? Buffer.byteLength(rawBody) : rawBody.length;
  if (size > MAX_CONFIRMATION_BYTES) {
    return { ok: false, error: `confirmation body exceeds ${MAX_CONFIRMATION_BYTES} bytes` };
  }
  let json: unknown;
  try {
    json = JSON.parse(typeof rawBody === 'string' ? rawBody : rawBody.toString('utf8'));
  } catch {
    return { ok: false, error: 'confirmation body is not valid JSON' };
  }
  const r = confirmationSchema.safeParse(json);
  if (!r.success) {
    const error = r.error.issues
      .map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message))
      .join('; ');
    return { ok: false, error };
  }
  const { reversalId, idempotencyKey, providerRef } = r.data;
  const confirmation = {
    providerRef,
    ...(reversalId !== undefined ? { reversalId } : {}),
    ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
  } as Confirmation;
  return { ok: true, confirmation };
}

/**
 * Signature check, then parse: what a webhook route needs in one call. A bad signature yields
 * `{ ok: false, error: 'invalid signature' }` without looking at the body (answer 401).
 */
export function verifyAndParseConfirmation(
  secret: string | Buffer | ReadonlyArray<string | Buffer>,
  rawBody: string | Buffer,
  header: string | ReadonlyArray<string> | null | undefined,
): ConfirmationParse & { signatureValid: boolean } {
  if (!verifySignature(secret, rawBody, header))
    return { ok: false, error: 'invalid signature', signatureValid: false };
  return { ...parseConfirmation(rawBody), signatureValid: true };
}
