import { recordWatchedOutcome, voidedConflict } from '../reinstatement/reinstatement.repository';
import { sql } from 'kysely';
import { DomainError, notFound } from '../errors/domain-error';
import { appendEvent } from '../event/event.repository';
import { assertProvidersOwnRef } from '../reversal/provider-ref';
import type { ReversalRow } from '../reversal/reversal.service';
import type { Tx } from '../store/tx';

/**
 * SQL for reversal dispatch. Every function here runs inside a transaction opened by src/store/tx.ts, so row-level
 * security confines it to that transaction's fleet; the two cross-fleet look-ups go through the narrow SECURITY
 * DEFINER functions of db/migrations/0002_dispatch.ts.
 */

/** A dispatch lease: who took the reversal and which take it was (the `attempts` count after that take). */
export interface Lease {
  holder: string;
  attempt: number;
}

/** A reversal as a dispatcher holds it: the row, its lease, and what the provider needs about its effect. */
export interface DispatchItem {
  id: string;
  fleetId: string;
  effectId: string;
  retractionId: string;
  idempotencyKey: string;
  amount: { amountMinor: number; currency: string } | null;
  attempts: number;
  leaseExpiresAt: Date;
  dispatchedAt: Date;
  lease: Lease;
  effect: { kind: string; externalRef: string | null; payload: unknown };
}

export interface DispatchRow extends ReversalRow {
  lease_holder: string | null;
  last_error: string | null;
}

/** Per-fleet counts from retract_dispatch_fleets. */
export interface FleetBacklog {
  fleetId: string;
  ready: number;
  stuck: number;
}

export async function dispatchFleets(tx: Tx, resendWindowMs: number): Promise<FleetBacklog[]> {
  const r = await sql<{ fleet_id: string; ready: string; stuck: string }>`
    SELECT fleet_id, ready::text, stuck::text FROM retract_dispatch_fleets(${resendWindowMs}::bigint)`.execute(tx);
  return r.rows.map((row) => ({ fleetId: row.fleet_id, ready: Number(row.ready), stuck: Number(row.stuck) }));
}

/**
 * Takes up to `limit` reversals of `fleet` that are OWED, or DISPATCHED with an expired lease and a first dispatch
 * inside the resend window, oldest first, skipping rows another transaction holds. Each becomes DISPATCHED under a
 * fresh lease (`attempts` + 1, `lease_holder`), keeping `dispatched_at` as the first dispatch. One
 * ReversalDispatched event row per retraction records the take.
 */
export async function takeInTx(
  tx: Tx,
  fleet: string,
  actorId: string | null,
  opts: { limit: number; leaseMs: number; holder: string; resendWindowMs: number },
): Promise<DispatchItem[]> {
  const r = await sql<{
    id: string; effect_id: string; retraction_id: string; idempotency_key: string; amount_minor: string | null;
    currency: string | null; attempts: number; lease_expires_at: Date; dispatched_at: Date; kind: string;
    external_ref: string | null; payload: unknown;
  }>`
    WITH picked AS (
      SELECT r.id FROM reversals r
       WHERE r.fleet_id = ${fleet} AND r.status IN ('OWED', 'DISPATCHED')
         AND (r.status = 'OWED'
              OR (r.lease_expires_at < now()
                  AND r.dispatched_at > now() - make_interval(secs => ${opts.resendWindowMs}::bigint / 1000.0)))
       ORDER BY r.id
       LIMIT ${opts.limit}
       FOR UPDATE OF r SKIP LOCKED
    ), taken AS (
      UPDATE reversals r
         SET status = 'DISPATCHED',
             attempts = r.attempts + 1,
             lease_holder = ${opts.holder},
             lease_expires_at = now() + make_interval(secs => ${opts.leaseMs}::bigint / 1000.0),
             dispatched_at = coalesce(r.dispatched_at, now())
        FROM picked WHERE r.id = picked.id
      RETURNING r.id, r.effect_id, r.retraction_id, r.idempotency_key, r.amount_minor, r.currency, r.attempts,
                r.lease_expires_at, r.dispatched_at
    )
    SELECT t.id::text AS id, t.effect_id::text AS effect_id, t.retraction_id::text AS retraction_id, t.idempotency_key,
           t.amount_minor::text AS amount_minor, t.currency, t.attempts, t.lease_expires_at, t.dispatched_at,
           e.kind, e.external_ref, e.payload
      FROM taken t JOIN effects e ON e.id = t.effect_id
     ORDER BY t.id`.execute(tx);

  const byRetraction = new Map<string, string[]>();
  for (const row of r.rows) {
    const ids = byRetraction.get(row.retraction_id) ?? [];
    ids.push(row.id);
    byRetraction.set(row.retraction_id, ids);
  }
  for (const [retractionId, ids] of byRetraction) {
    await appendEvent(tx, {
      fleet, type: 'ReversalDispatched', actorId, retractionId, ids,
      data: { holder: opts.holder, leaseMs: opts.leaseMs },
    });
  }
  return r.rows.map((row) => ({
    id: row.id,
    fleetId: fleet,
    effectId: row.effect_id,
    retractionId: row.retraction_id,
    idempotencyKey: row.idempotency_key,
    amount: row.amount_minor !== null && row.currency !== null ? { amountMinor: Number(row.amount_minor), currency: row.currency } : null,
    attempts: row.attempts,
    leaseExpiresAt: row.lease_expires_at,
    dispatchedAt: row.dispatched_at,
    lease: { holder: opts.holder, attempt: row.attempts },
    effect: { kind: row.kind, externalRef: row.external_ref, payload: row.payload },
  }));
}

async function lockReversal(tx: Tx, id: string): Promise<DispatchRow | undefined> {
  const r = await sql<DispatchRow>`
    SELECT id::text AS id, fleet_id, effect_id::text AS effect_id, retraction_id::text AS retraction_id, status,
           idempotency_key, amount_minor::text AS amount_minor, currency, reason, provider_ref, attempts,
           lease_expires_at, created_at, dispatched_at, confirmed_at, failed_at, lease_holder, last_error
      FROM reversals WHERE id = ${id} FOR UPDATE`.execute(tx);
  return r.rows[0];
}

/** What happened to an outcome handed to the store. */
export type RecordResult =
  | { applied: true; status: 'CONFIRMED' | 'FAILED' | 'DISPATCHED'; reversal: DispatchRow }
  /** Already CONFIRMED under this very reference: nothing changed (a replayed outcome). */
  | { applied: false; why: 'duplicate'; reversal: DispatchRow }
  /** The lease was taken over (or the reversal settled) since this take: the outcome is not the latest word. */
  | { applied: false; why: 'stale-lease'; reversal: DispatchRow };

/**
 * CONFIRMED with the provider's reference, with the semantics of confirmReversal: the same reference again is a
 * no-op; a different reference for a CONFIRMED reversal, or any for an UNREACHABLE one, is a CONFLICT; a reference
 * RETRACT issued is refused (src/reversal/provider-ref.ts). Accepted from any send whatever its lease (the money
 * moved), including over FAILED. `via` says who reported it (the event's data).
 */
export async function confirmInTx(
  tx: Tx,
  fleet: string,
  actorId: string | null,
  reversalId: string,
  providerRef: string,
  via: string,
): Promise<RecordResult> {
  const r = await lockReversal(tx, reversalId);
  if (!r) throw notFound('reversal', reversalId);
  if (r.status === 'CONFIRMED') {
    if (r.provider_ref === providerRef) return { applied: false, why: 'duplicate', reversal: r };
    throw new DomainError(
      'CONFLICT',
      `reversalId: reversal ${reversalId} is already confirmed under another provider reference; the provider may have paid twice — reconcile with the provider`,
      'reversalId',
    );
  }
  if (r.status === 'UNREACHABLE') {
    throw new DomainError('CONFLICT', `reversalId: reversal ${reversalId} is UNREACHABLE: no compensation exists for its effect`, 'reversalId');
  }
  if (r.status === 'VOIDED') throw voidedConflict(reversalId);
  await assertProvidersOwnRef(tx, fleet, providerRef);
  const done = await sql<DispatchRow>`
    UPDATE reversals SET status = 'CONFIRMED', provider_ref = ${providerRef}, confirmed_at = now(), lease_expires_at = NULL
     WHERE id = ${reversalId}
    RETURNING id::text AS id, fleet_id, effect_id::text AS effect_id, retraction_id::text AS retraction_id, status,
              idempotency_key, amount_minor::text AS amount_minor, currency, reason, provider_ref, attempts,
              lease_expires_at, created_at, dispatched_at, confirmed_at, failed_at, lease_holder, last_error`.execute(tx);
  await appendEvent(tx, {
    fleet, type: 'ReversalConfirmed', actorId, retractionId: r.retraction_id, ids: [reversalId],
    data: { providerRef, via, previousStatus: r.status },
  });
  await recordWatchedOutcome(tx, fleet, actorId, reversalId, 'CONFIRMED');
  return { applied: true, status: 'CONFIRMED', reversal: done.rows[0]! };
}

/**
 * FAILED with the provider's reason, fenced: only when the reversal is still DISPATCHED under exactly this lease
 * (same holder, same take). A late worker whose lease was taken over gets `stale-lease` and changes nothing.
 */
export async function failInTx(tx: Tx, fleet: string, actorId: string | null, reversalId: string, lease: Lease, reason: string): Promise<RecordResult> {
  const r = await lockReversal(tx, reversalId);
  if (!r) throw notFound('reversal', reversalId);
  if (!holds(r, lease)) return { applied: false, why: 'stale-lease', reversal: r };
  const done = await sql<DispatchRow>`
    UPDATE reversals SET status = 'FAILED', reason = ${reason}, last_error = ${reason}, failed_at = now(), lease_expires_at = NULL
     WHERE id = ${reversalId}
    RETURNING id::text AS id, fleet_id, effect_id::text AS effect_id, retraction_id::text AS retraction_id, status,
              idempotency_key, amount_minor::text AS amount_minor, currency, reason, provider_ref, attempts,
              lease_expires_at, created_at, dispatched_at, confirmed_at, failed_at, lease_holder, last_error`.execute(tx);
  await appendEvent(tx, {
    fleet, type: 'ReversalFailed', actorId, retractionId: r.retraction_id, ids: [reversalId],
    data: { reason, holder: lease.holder, attempt: lease.attempt },
  });
  await recordWatchedOutcome(tx, fleet, actorId, reversalId, 'FAILED');
  return { applied: true, status: 'FAILED', reversal: done.rows[0]! };
}

/**
 * An inconclusive answer, fenced like failInTx: the reversal stays DISPATCHED (its lease runs out and it is re-sent
 * under the same key); only `last_error` is noted. No state changes, so no event.
 */
export async function retryLaterInTx(tx: Tx, reversalId: string, lease: Lease, reason: string): Promise<RecordResult> {
  const r = await lockReversal(tx, reversalId);
  if (!r) throw notFound('reversal', reversalId);
  if (!holds(r, lease)) return { applied: false, why: 'stale-lease', reversal: r };
  await sql`UPDATE reversals SET last_error = ${reason} WHERE id = ${reversalId}`.execute(tx);
  return { applied: true, status: 'DISPATCHED', reversal: { ...r, last_error: reason } };
}

function holds(r: DispatchRow, lease: Lease): boolean {
  return r.status === 'DISPATCHED' && r.attempts === lease.attempt && r.lease_holder === lease.holder;
}

/** Reversals whose lease ran out after the resend window: never re-sent automatically; an operator decides. */
export async function stuckInTx(tx: Tx, fleet: string, resendWindowMs: number, limit: number): Promise<DispatchRow[]> {
  const r = await sql<DispatchRow>`
    SELECT id::text AS id, fleet_id, effect_id::text AS effect_id, retraction_id::text AS retraction_id, status,
           idempotency_key, amount_minor::text AS amount_minor, currency, reason, provider_ref, attempts,
           lease_expires_at, created_at, dispatched_at, confirmed_at, failed_at, lease_holder, last_error
      FROM reversals
     WHERE fleet_id = ${fleet} AND status = 'DISPATCHED' AND lease_expires_at < now()
       AND dispatched_at <= now() - make_interval(secs => ${resendWindowMs}::bigint / 1000.0)
     ORDER BY reversals.id LIMIT ${limit}`.execute(tx);
  return r.rows;
}

/** The reversal a provider callback names, across fleets (retract_locate_reversal): at most two rows. */
export async function locateReversal(
  tx: Tx,
  by: { reversalId?: string | null; idempotencyKey?: string | null },
): Promise<Array<{ id: string; fleetId: string; idempotencyKey: string }>> {
  const r = await sql<{ id: string; fleet_id: string; idempotency_key: string }>`
    SELECT id::text AS id, fleet_id, idempotency_key
      FROM retract_locate_reversal(${by.reversalId ?? null}::bigint, ${by.idempotencyKey ?? null}::text)`.execute(tx);
  return r.rows.map((row) => ({ id: row.id, fleetId: row.fleet_id, idempotencyKey: row.idempotency_key }));
}
