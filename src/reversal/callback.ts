import type { Core } from '../core';
import { DomainError } from '../errors/domain-error';
import { inTx } from '../store/tx';
import { verifyAndParseConfirmation } from './provider/webhook';
import { locateReversal } from './reversal.repository';
import { confirmFromProvider } from './dispatch.service';

/** The header the provider signs its confirmation in. */
export { SIGNATURE_HEADER } from './provider/webhook';

/** Minimal structured logger (a pino logger fits). */
export interface CallbackLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface ProviderCallbackInput {
  core: Core;
  /** The shared webhook secret (or several, during rotation). Empty is a misconfiguration: answered 500. */
  secret: string | Buffer | ReadonlyArray<string | Buffer>;
  /** The request body exactly as received, before any JSON parsing. */
  rawBody: string | Buffer;
  /** The `X-Retract-Signature` header value(s). */
  signatureHeader: string | ReadonlyArray<string> | null | undefined;
  logger?: CallbackLogger;
}

export interface CallbackResponse {
  status: 200 | 400 | 401 | 404 | 409 | 500;
  body: Record<string, unknown>;
}

const ID_RE = /^[1-9][0-9]{0,18}$/;

/**
 * A provider's signed confirmation (`POST /providers/callback`), framework-free: verify the HMAC over the raw
 * body, parse `{ reversalId | idempotencyKey, providerRef }`, find the reversal (across fleets, through
 * retract_locate_reversal), and confirm it in its fleet with confirmReversal semantics.
 * - 200: CONFIRMED now, or already CONFIRMED under this same reference (`duplicate: true`; replays are harmless).
 * - 401: bad or missing signature (logged; the body is not looked at).
 * - 400: a body that is not a valid confirmation, an id that is not an id, reversalId and idempotencyKey naming
 *   different reversals, or a reference RETRACT issued (src/reversal/provider-ref.ts).
 * - 404: no such reversal.
 * - 409: already CONFIRMED under another reference, UNREACHABLE, or a key that names reversals in several fleets
 *   (send reversalId instead).
 * - 500: misconfiguration (empty secret) or an unexpected error; the message is masked and logged.
 * Never throws.
 */
export async function handleProviderCallback(input: ProviderCallbackInput): Promise<CallbackResponse> {
  const log = input.logger;
  let parsed: ReturnType<typeof verifyAndParseConfirmation>;
  try {
    parsed = verifyAndParseConfirmation(input.secret, input.rawBody, input.signatureHeader);
  } catch (err) {
    log?.error({ err: (err as Error).message }, 'provider callback: webhook secret is not configured');
    return { status: 500, body: { error: 'internal error' } };
  }
  if (!parsed.signatureValid) {
    log?.warn(
      { bytes: Buffer.byteLength(input.rawBody), hasSignature: input.signatureHeader != null },
      'provider callback refused: invalid signature',
    );
    return { status: 401, body: { error: 'invalid signature' } };
  }
  if (!parsed.ok) return { status: 400, body: { error: parsed.error } };
  const { reversalId, idempotencyKey, providerRef } = parsed.confirmation;
  if (reversalId !== undefined && (!ID_RE.test(reversalId) || BigInt(reversalId) > 9223372036854775807n)) {
    return { status: 400, body: { error: 'reversalId: must be a valid id' } };
  }
  try {
    const found = await inTx(input.core.store, { fleet: null, readOnly: true }, (tx) =>
      locateReversal(tx, reversalId !== undefined ? { reversalId } : { idempotencyKey: idempotencyKey ?? null }),
    );
    if (found.length === 0) return { status: 404, body: { error: 'unknown reversal' } };
    if (found.length > 1) {
      return {
        status: 409,
        body: { error: 'idempotencyKey names reversals in more than one fleet; name the reversal by reversalId' },
      };
    }
    const target = found[0]!;
    if (idempotencyKey !== undefined && target.idempotencyKey !== idempotencyKey) {
      return { status: 400, body: { error: 'reversalId and idempotencyKey name different reversals' } };
    }
    const r = await confirmFromProvider(input.core, target.fleetId, target.id, providerRef, 'callback');
    log?.info(
      { reversalId: target.id, fleet: target.fleetId, providerRef, duplicate: !r.applied },
      'provider callback confirmed reversal',
    );
    return {
      status: 200,
      body: { reversalId: target.id, status: 'CONFIRMED', providerRef: r.reversal.provider_ref, duplicate: !r.applied },
    };
  } catch (err) {
    if (err instanceof DomainError) {
      const status =
        err.code === 'NOT_FOUND' ? 404 : err.code === 'CONFLICT' ? 409 : err.code === 'BAD_USER_INPUT' ? 400 : 500;
      if (status === 409)
        log?.warn({ reversalId, idempotencyKey, providerRef, err: err.message }, 'provider callback conflicts');
      if (status !== 500) return { status, body: { error: err.message } };
    }
    log?.error({ err: (err as Error)?.message ?? String(err) }, 'provider callback failed');
    return { status: 500, body: { error: 'internal error' } };
  }
}
